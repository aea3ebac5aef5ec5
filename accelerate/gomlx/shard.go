package gomlx

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // GoMLX's graph API reads best dot-imported
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"

	"github.com/goaccel/goaccel/accelerate/fsdp"
	"github.com/goaccel/goaccel/accelerate/pg"
)

// Sharded training (FSDP's SHARD_GRAD_OP, ZeRO-2; FULL_SHARD and the
// hybrid strategies build on it: fullshard.go, hybrid.go). The trainable
// variables are seen as one flat float32 vector, in the Trainer's
// parameter order, padded to N equal shares; process r owns share r, as
// torch's FSDP owns chunk r of a flat parameter. Every process keeps the whole model's
// variables (its forward and backward run as with DDP), but the float32
// masters and the optimizer's state only for its share: the masters'
// context holds one variable per parameter that meets the share, named
// "name[from:to]" (the range of the parameter's flat values), which the
// optimizer updates as it would the whole variable. A synchronising step
// reduce-scatters the gradients (each process receives the mean of its
// share), clips them by the norm over all shares, applies the optimizer
// to the share in a local graph, and all-gathers the updated parameters
// into every process's variables. The traffic is DDP's (a ring all-reduce
// is a reduce-scatter and an all-gather); the masters and the optimizer
// state per process fall as 1/N.
//
// The optimizer must update each value from its own gradient and state
// (SGD, Adam, AdamW: GoMLX's and this package's); AdamW's weight-decay
// rule sees the whole variable's name and shape.

// shardLayout is this process's share of the flat parameter vector.
type shardLayout struct {
	// group shards the parameters (the whole group, or with the hybrid
	// strategies this node's processes); replicas, with the hybrid
	// strategies, are the processes of the other nodes that hold the same
	// share (its rank is the node's index), nil otherwise.
	group, replicas *pg.Group
	rank, world     int
	total, share    int
	flat            []float32 // world·share: the gradients (each param's hostGrad is a view), then the gathered parameters
	grad            []float32 // share: the mean gradient of this process's share
	own             []float32 // share: this process's updated parameters
	segs            []segment // the parameters that meet the share, in order
	exec            *context.Exec
	released        bool // FULL_SHARD: the model's variables and flat are dropped (fullshard.go)
	accumulating    bool // gradients of micro-batches are in flat, waiting for the synchronising one
	// onShareReduced, set by tests, sees the share's reduced gradients
	// before the loss scaler and the optimizer do.
	onShareReduced func(grad []float32)
}

// segment is the part [from, to) of one parameter's flat values that lies
// in this process's share, at offset at of the share.
type segment struct {
	p        *param
	from, to int
	at       int
	master   *context.Variable // float32 [to-from], in the masters' context
}

// shardingStrategy returns how t shards (FSDP with more than one
// process; 0: it does not), refusing what it cannot do.
func shardingStrategy(t *Trainer) (fsdp.ShardingStrategy, error) {
	p := t.acc.FSDPPlugin()
	if p == nil || p.ShardingStrategy == fsdp.NoShard || t.acc.NumProcesses() == 1 {
		return 0, nil
	}
	return p.ShardingStrategy, nil // NewAccelerator refused what no layout can shard (HYBRID_SHARD on one node)
}

// buildShards lays params out flat, makes their host gradients views of the
// flat buffer and creates the masters of this process's share from the
// parameters' host values.
func (t *Trainer) buildShards(params []*param, masters *context.Context) (*shardLayout, error) {
	g, replicas, err := t.shardGroups()
	if err != nil {
		return nil, err
	}
	total := 0
	for _, p := range params {
		total += p.size()
	}
	world := g.Size()
	share := (total + world - 1) / world
	l := &shardLayout{group: g, replicas: replicas, rank: g.Rank(), world: world, total: total, share: share,
		flat: make([]float32, world*share), grad: make([]float32, share), own: make([]float32, share)}
	lo, hi := min(l.rank*share, total), min((l.rank+1)*share, total)
	at := 0
	for _, p := range params {
		n := len(p.host)
		p.hostGrad = l.flat[at : at+n : at+n]
		if from, to := max(lo, at), min(hi, at+n); from < to {
			s := segment{p: p, from: from - at, to: to - at, at: from - lo}
			s.master = masters.Checked(false).InAbsPath(p.v.Scope()).VariableWithValue(fmt.Sprintf("%s[%d:%d]", p.v.Name(), s.from, s.to),
				tensors.FromFlatDataAndDimensions(append([]float32(nil), p.host[s.from:s.to]...), s.to-s.from))
			setWholeOf(masters, s)
			copy(l.own[s.at:], p.host[s.from:s.to])
			l.segs = append(l.segs, s)
		}
		at += n
	}
	return l, nil
}

// wholeParam is the masters' context's hyperparameter, in a share
// master's scope, that names the whole variable the master is a range of
// and its dimensions ("/model/dense/weights|64,512"): AdamW's weight-decay
// rule decides by them, from the context its graph is given, whatever the
// optimizer is.
const wholeParam = "goaccel_whole_of_"

func setWholeOf(masters *context.Context, s segment) {
	dims := make([]string, len(s.p.shape))
	for i, d := range s.p.shape {
		dims[i] = strconv.Itoa(d)
	}
	masters.InAbsPath(s.p.v.Scope()).SetParam(wholeParam+s.master.Name(), s.p.name+"|"+strings.Join(dims, ","))
}

// wholeOf is the whole variable a share master v of ctx is a range of.
func wholeOf(ctx *context.Context, v *context.Variable) (name string, dims []int, ok bool) {
	x, found := ctx.InAbsPath(v.Scope()).GetParam(wholeParam + v.Name())
	s, isString := x.(string)
	if !found || !isString {
		return "", nil, false
	}
	name, list, _ := strings.Cut(s, "|")
	for _, f := range strings.Split(list, ",") {
		if f == "" {
			continue
		}
		d, err := strconv.Atoi(f)
		if err != nil {
			return "", nil, false
		}
		dims = append(dims, d)
	}
	return name, dims, true
}

// loadShards writes the share's masters, and own, from the parameters'
// host values (after process 0's broadcast or a checkpoint).
func (l *shardLayout) loadShards() error {
	for _, s := range l.segs {
		copy(l.own[s.at:], s.p.host[s.from:s.to])
		v := tensors.FromFlatDataAndDimensions(append([]float32(nil), s.p.host[s.from:s.to]...), s.to-s.from)
		if err := s.master.SetValue(v); err != nil {
			return fmt.Errorf("gomlx: setting %s: %w", s.master.ScopeAndName(), err)
		}
	}
	return nil
}

// afterShardedStep is afterStep with FSDP: the gradients are collected on
// the host as with DDP; a synchronising step reduce-scatters them, clips
// them over all shares, updates this process's share and gathers the
// parameters.
func (t *Trainer) afterShardedStep() error {
	l := t.shard
	accSteps := t.acc.GradientAccumulationSteps()
	ctx := t.acc.Context()
	start := time.Now()
	var toHost time.Duration
	err := t.acc.AccumulateSharded(func() error {
		err := t.collect(accSteps)
		toHost = time.Since(start)
		return err
	}, func() error {
		clear(l.flat[l.total:])
		var err error
		if _, half := wireOf(t.reduce); half { // FSDP's mixed-precision policy (policy.go)
			err = l.reduceScatter16(ctx, t.reduce)
		} else {
			// In place: the flat gradients are scratch once reduced.
			var share []float32
			share, err = l.group.ReduceScatterInPlaceFloat32(ctx, l.flat, pg.Mean)
			copy(l.grad, share)
			if err == nil && l.replicas != nil { // the same share on every node: the mean of the nodes' means
				err = l.replicas.AllReduceFloat32(ctx, l.grad, pg.Mean)
			}
		}
		if err == nil && l.onShareReduced != nil {
			l.onShareReduced(l.grad)
		}
		return err
	})
	t.mu.Lock()
	t.stats.MicroSteps++
	t.stats.ToHost += toHost
	if t.acc.SyncGradientsNow() {
		t.stats.AllReduce += time.Since(start) - toHost
	}
	t.mu.Unlock()
	if err != nil {
		return fmt.Errorf("gomlx: FSDP: reduce-scattering the gradients: %w", err)
	}
	sync := t.acc.SyncGradientsNow()
	t.mu.Lock()
	l.accumulating = !sync
	t.mu.Unlock()
	if !sync {
		return nil
	}
	if t.scaler != nil {
		if err := t.scaledShardStep(); err != nil {
			return err
		}
	} else {
		if err := t.clipShard(); err != nil {
			return err
		}
		if err := t.applyShard(); err != nil {
			return err
		}
	}
	t.zeroHostGrads()
	if err := t.checkDivergence(); err != nil {
		return err
	}
	return t.release()
}

// scaledShardStep is a synchronising step with fp16's loss scaler: the
// share's gradients are unscaled, the verdict is every share's (a process
// whose share overflowed makes every process skip the step, as torch's
// ShardedGradScaler does), then the share is clipped and applied, or the
// step skipped and the scale backed off, on every process alike.
func (t *Trainer) scaledShardStep() error {
	l := t.shard
	found := 0.0
	if t.scaler.Unscale32([][]float32{l.grad}) {
		found = 1
	}
	verdict := []float64{found}
	if err := l.group.AllReduceFloat64(t.acc.Context(), verdict, pg.Max); err != nil { // the node's shares cover every value
		return fmt.Errorf("gomlx: FSDP: the loss scaler's verdict: %w", err)
	}
	t.scaler.AddFoundInf(verdict[0] > 0)
	if err := t.clipShard(); err != nil {
		return err
	}
	return t.scaledStep(t.applyShard)
}

// clipShard clips the share's gradients as WithClipGradNorm and
// WithClipGradValue clip the whole gradient: the norm is over every
// process's share (an all-reduce of one number).
func (t *Trainer) clipShard() error {
	l, c := t.shard, t.cfg
	switch {
	case c.clipNorm > 0:
		p := c.clipNormType
		var local float64
		op := pg.Sum
		for _, g := range l.grad {
			a := math.Abs(float64(g))
			switch {
			case math.IsInf(p, 1):
				local = math.Max(local, a)
			case p == 2:
				local += a * a
			default:
				local += math.Pow(a, p)
			}
		}
		if math.IsInf(p, 1) {
			op = pg.Max
		}
		total := []float64{local}
		if err := l.group.AllReduceFloat64(t.acc.Context(), total, op); err != nil { // the node's shares cover every value
			return fmt.Errorf("gomlx: FSDP: the gradients' norm: %w", err)
		}
		norm := total[0]
		if !math.IsInf(p, 1) {
			norm = math.Pow(norm, 1/p)
		}
		if coef := c.clipNorm / (norm + 1e-6); coef < 1 {
			for i := range l.grad {
				l.grad[i] *= float32(coef)
			}
		}
		t.mu.Lock()
		t.gradNorm = norm
		t.mu.Unlock()
	case c.clipValue > 0:
		v := float32(c.clipValue)
		for i, g := range l.grad {
			l.grad[i] = min(max(g, -v), v)
		}
	}
	return nil
}

// applyShard runs the optimizer on this process's share and all-gathers
// the parameters into every process's variables.
func (t *Trainer) applyShard() error {
	l := t.shard
	lr, err := t.setLearningRate()
	if err != nil {
		return err
	}
	exec, err := t.shardExec()
	if err != nil {
		return err
	}
	args := make([]any, len(l.segs))
	for i, s := range l.segs {
		args[i] = tensors.FromFlatDataAndDimensions(append([]float32(nil), l.grad[s.at:s.at+s.to-s.from]...), s.to-s.from)
	}
	start := time.Now()
	var out []*tensors.Tensor
	if len(args) > 0 {
		if err := catch(func() { out = must(exec.Exec(args...)) }); err != nil {
			return fmt.Errorf("gomlx: applying the gradients with the optimizer: %w", err)
		}
	}
	clear(l.own)
	for i, s := range l.segs {
		if err := tensors.ConstFlatData(out[i], func(v []float32) { copy(l.own[s.at:], v) }); err != nil {
			return fmt.Errorf("gomlx: reading %s: %w", s.master.ScopeAndName(), err)
		}
	}
	apply := time.Since(start)
	if !t.releases() { // FULL_SHARD gathers before the next step instead
		if err := l.group.AllGatherFloat32(t.acc.Context(), l.flat, l.own); err != nil {
			return fmt.Errorf("gomlx: FSDP: all-gathering the parameters: %w", err)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stats.Apply += apply
	at := 0
	for _, p := range t.params {
		if t.releases() {
			p.host = nil // gathered again from the new shares when needed (gatherHost)
			continue
		}
		copy(p.host, l.flat[at:at+len(p.host)])
		at += len(p.host)
		if err := p.v.SetValue(fromHost(p.host, p.v.DType(), p.shape)); err != nil {
			return fmt.Errorf("gomlx: setting %s: %w", p.name, err)
		}
	}
	if len(out) > 0 {
		if err := optimizers.GetGlobalStepVar(t.ctx).SetValue(out[len(l.segs)]); err != nil {
			return fmt.Errorf("gomlx: setting the global step: %w", err)
		}
	} else if err := t.stepGlobalStep(); err != nil {
		return err
	}
	t.lr = lr
	t.steps++
	t.stats.Steps++
	return nil
}

// stepGlobalStep advances the global step of a process whose share is
// empty (more processes than values): no optimizer graph runs there.
func (t *Trainer) stepGlobalStep() error {
	gs := optimizers.GetGlobalStepVar(t.ctx)
	v, err := gs.Value()
	if err != nil {
		return fmt.Errorf("gomlx: reading the global step: %w", err)
	}
	n := tensors.ToScalar[int64](v)
	return gs.SetValue(tensors.FromScalar(n + 1))
}

// shardExec builds the share's update graph once: the optimizer applies
// the share's gradients (inputs, one per segment) to the share's masters
// and keeps its state beside them; the graph returns the new masters, then
// the global step.
func (t *Trainer) shardExec() (*context.Exec, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.shard
	if l.exec != nil || len(l.segs) == 0 {
		return l.exec, nil
	}
	index := map[*context.Variable]int{}
	for i, s := range l.segs {
		index[s.master] = i
	}
	var exec *context.Exec
	err := catch(func() {
		exec = must(context.NewExec(t.backend, t.masters.Checked(false), func(ctx *context.Context, grads []*Node) []*Node {
			g := grads[0].Graph()
			for _, s := range l.segs {
				_ = s.master.ValueGraph(g)
			}
			// The optimizer takes the gradients in the context's order.
			ordered := make([]*Node, 0, len(grads))
			for v := range ctx.IterVariables() {
				if i, ok := index[v]; ok && v.Trainable {
					ordered = append(ordered, grads[i])
				}
			}
			t.opt.UpdateGraphWithGradients(ctx, ordered, dtypes.Float32)
			out := make([]*Node, 0, len(l.segs)+1)
			for _, s := range l.segs {
				out = append(out, s.master.ValueGraph(g))
			}
			return append(out, optimizers.GetGlobalStepVar(ctx).ValueGraph(g))
		}))
	})
	if err != nil {
		return nil, fmt.Errorf("gomlx: building the sharded update graph: %w", err)
	}
	l.exec = exec.WithName("goaccel sharded update")
	return l.exec, nil
}

// StateBytes is the memory this process holds for training state, by
// part: the model's parameters (its variables in the compute dtype and
// host copies of them), the float32 masters, the optimizer's state (in the
// masters' context) and the gradients (the training graph's float32
// gradient variables and the host buffers). With FSDP's SHARD_GRAD_OP the
// masters and the optimizer state are this process's share; with
// FULL_SHARD, between steps, everything is.
type StateBytes struct {
	Parameters, Masters, Optimizer, Gradients int64
}

// Total is the sum of the parts.
func (b StateBytes) Total() int64 { return b.Parameters + b.Masters + b.Optimizer + b.Gradients }

// StateBytes measures what this process holds now (zero before the first
// step builds the model).
func (t *Trainer) StateBytes() StateBytes {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b StateBytes
	if !t.built {
		return b
	}
	if t.shard != nil {
		b.Gradients = int64(4 * (len(t.shard.flat) + len(t.shard.grad)))
	}
	for _, p := range t.params {
		if t.shard == nil {
			b.Gradients += int64(4 * len(p.hostGrad))
		}
		if p.grad != nil && p.grad.HasValue() {
			b.Gradients += int64(p.grad.Shape().Memory())
		}
		if p.v.HasValue() && p.master != p.v {
			b.Parameters += int64(p.v.Shape().Memory())
		}
		b.Parameters += int64(4 * len(p.host))
	}
	for v := range t.masters.IterVariables() {
		if !v.HasValue() {
			continue
		}
		n := int64(v.Shape().Memory())
		switch {
		case v.Trainable:
			b.Masters += n
		case v.Name() != optimizers.ParamLearningRate && v.Shape().Size() > 1:
			b.Optimizer += n
		}
	}
	return b
}
