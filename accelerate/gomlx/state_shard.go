package gomlx

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"

	"github.com/goaccel/goaccel/accelerate/checkpoint"
	"github.com/goaccel/goaccel/accelerate/fsdp"
	"github.com/goaccel/goaccel/accelerate/safetensors"
)

// Checkpoints of a sharded Trainer hold the whole optimizer state, as
// DDP's do (FSDP's FULL_STATE_DICT): each process sends its share of every
// per-value state variable (Adam's moments of "w[from:to]") to process 0,
// which joins the shares into the variable of the whole parameter ("w"'s
// moments) and writes them. Loading slices each process's share out of the
// whole variables, so a checkpoint resumes on any number of processes,
// sharded or not, and a DDP checkpoint resumes sharded.

// statePiece is this process's share of one state variable.
type statePiece struct {
	Scope, Name string // the whole variable's scope and name
	Param       int    // the parameter it belongs to
	From, To    int    // the range of the parameter's flat values
	Data        []float32
}

// segmentOf finds the segment a state variable of the masters' context
// belongs to: its name starts with the segment's master's name
// ("w[0:40]_1st_moment") and its scope ends with the parameter's. It
// returns the whole variable's name ("w_1st_moment").
func (l *shardLayout) segmentOf(scope, name string, size int) (*segment, string, bool) {
	for i := range l.segs {
		s := &l.segs[i]
		prefix := s.master.Name()
		if !strings.HasPrefix(name, prefix) || s.to-s.from != size || !scopeEndsWith(scope, s.p.v.Scope()) {
			continue
		}
		return s, s.p.v.Name() + name[len(prefix):], true
	}
	return nil, "", false
}

func scopeEndsWith(scope, suffix string) bool {
	s, x := strings.TrimSuffix(scope, context.ScopeSeparator), strings.TrimSuffix(suffix, context.ScopeSeparator)
	return x == "" || strings.HasSuffix(s, x)
}

// localState is this process's optimizer state: its share of every
// per-value variable, and (on process 0) the variables that are not per
// value (step counts: the same on every process).
func (t *Trainer) localState() (l *shardLayout, params []*param, mine []statePiece, plain []safetensors.Tensor, err error) {
	t.mu.Lock()
	l, masters, params := t.shard, t.masters, t.params
	t.mu.Unlock()
	if l == nil {
		return nil, nil, nil, nil, errors.New("gomlx: saving the optimizer state before the first training step: there is none yet")
	}
	index := map[*param]int{}
	for i, p := range params {
		index[p] = i
	}
	if !l.writesShares() { // another node's copy of the same shares
		return l, params, nil, nil, nil
	}
	for v := range masters.IterVariables() {
		if v.Trainable || !v.HasValue() || v.Name() == optimizers.ParamLearningRate {
			continue
		}
		val, err := v.Value()
		if err != nil {
			return nil, nil, nil, nil, err
		}
		if s, whole, ok := l.segmentOf(v.Scope(), v.Name(), v.Shape().Size()); ok {
			if v.DType() != dtypes.Float32 {
				return nil, nil, nil, nil, fmt.Errorf("gomlx: the optimizer's %s is %s: a sharded optimizer's state must be float32", v.ScopeAndName(), v.DType())
			}
			mine = append(mine, statePiece{Scope: v.Scope(), Name: whole, Param: index[s.p], From: s.from, To: s.to,
				Data: tensors.MustCopyFlatData[float32](val)})
			continue
		}
		if t.acc.ProcessIndex() == 0 {
			st, err := toSafetensor(v.ScopeAndName(), val)
			if err != nil {
				return nil, nil, nil, nil, err
			}
			plain = append(plain, st)
		}
	}
	return l, params, mine, plain, nil
}

// key is the whole variable's scope and name.
func (pc statePiece) key() string {
	if pc.Scope == context.RootScope {
		return context.RootScope + pc.Name
	}
	return pc.Scope + context.ScopeSeparator + pc.Name
}

// shardedStateTensors is StateTensors of a sharded Trainer: a collective
// (every process calls it) whose tensors process 0 alone returns. Each
// process sends what it would write as its shard (ShardTensors); process 0
// joins them as LoadState joins shard files.
func (t *Trainer) shardedStateTensors() ([]safetensors.Tensor, error) {
	ts, shapes, err := (&optimizerState{t: t}).ShardTensors()
	if err != nil {
		return nil, err
	}
	md, err := checkpoint.ShapesMetadata(shapes)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := safetensors.Encode(&buf, ts, md); err != nil {
		return nil, fmt.Errorf("gomlx: encoding this process's optimizer state: %w", err)
	}
	all, err := t.acc.Group().Gather(t.acc.Context(), buf.Bytes(), 0)
	if err != nil {
		return nil, fmt.Errorf("gomlx: FSDP: gathering the optimizer state: %w", err)
	}
	if t.acc.ProcessIndex() != 0 {
		return nil, nil
	}
	files := make([]*safetensors.File, len(all))
	for r, b := range all {
		if files[r], err = safetensors.Decode(b); err != nil {
			return nil, fmt.Errorf("gomlx: process %d's optimizer state: %w", r, err)
		}
	}
	whole, err := checkpoint.JoinShards(files)
	if err != nil {
		return nil, fmt.Errorf("gomlx: the processes' optimizer state: %w", err)
	}
	return whole, nil
}

// shareOfState turns whole state tensors into this process's: a per-value
// variable of a parameter becomes the variable of the parameter's segment
// here ("w_1st_moment" → "w[0:40]_1st_moment", its values 0 to 40), or
// nothing where this process holds none of the parameter; the rest passes.
func (t *Trainer) shareOfState(ts []safetensors.Tensor) ([]safetensors.Tensor, error) {
	l := t.shard
	out := make([]safetensors.Tensor, 0, len(ts))
	for _, st := range ts {
		if strings.HasPrefix(st.Name, modelPrefix) {
			out = append(out, st)
			continue
		}
		scope, name := splitScopeName(st.Name)
		size := 1
		for _, d := range st.Shape {
			size *= d
		}
		p := t.paramOfState(scope, name, size)
		if p == nil {
			out = append(out, st)
			continue
		}
		if st.DType != safetensors.F32 {
			return nil, fmt.Errorf("gomlx: the checkpoint's %s is %s: a sharded optimizer's state must be float32", st.Name, st.DType)
		}
		for _, s := range l.segs {
			if s.p != p {
				continue
			}
			share := safetensors.Tensor{Name: scope + context.ScopeSeparator + s.master.Name() + name[len(p.v.Name()):],
				DType: safetensors.F32, Shape: []int{s.to - s.from}, Data: st.Data[4*s.from : 4*s.to]}
			if scope == context.RootScope {
				share.Name = context.RootScope + share.Name[len(scope)+1:]
			}
			out = append(out, share)
		}
	}
	return out, nil
}

// paramOfState is the parameter whose per-value state a whole variable is
// (its name starts with the parameter's, its scope ends with the
// parameter's, it has as many values): the longest such name wins.
func (t *Trainer) paramOfState(scope, name string, size int) *param {
	var best *param
	for _, p := range t.params {
		if p.size() != size || !strings.HasPrefix(name, p.v.Name()) || !scopeEndsWith(scope, p.v.Scope()) || scope == p.v.Scope() {
			continue
		}
		if best == nil || len(p.v.Name()) > len(best.v.Name()) {
			best = p
		}
	}
	return best
}

// shardedStateDict reports whether checkpoints hold each process's share
// (FSDP's SHARDED_STATE_DICT) rather than the whole state.
func (t *Trainer) shardedStateDict() bool {
	p := t.acc.FSDPPlugin()
	return t.sharded && p != nil && p.StateDictType == fsdp.ShardedStateDict
}

// ShardedState implements accelerate.ShardedState: with SHARDED_STATE_DICT
// each process writes its share of the optimizer state.
func (o *optimizerState) ShardedState() bool { return o.t.shardedStateDict() }

// ShardTensors implements accelerate.ShardedState.
func (o *optimizerState) ShardTensors() ([]safetensors.Tensor, map[string][]int, error) {
	t := o.t
	_, params, mine, out, err := t.localState()
	if err != nil {
		return nil, nil, err
	}
	shapes := map[string][]int{}
	for _, pc := range mine {
		p := params[pc.Param]
		shapes[pc.key()] = p.shape
		out = append(out, safetensors.FromFloat32s(checkpoint.RangeName(pc.key(), pc.From, pc.To), []int{pc.To - pc.From}, pc.Data))
	}
	if t.acc.ProcessIndex() == 0 {
		own, err := t.modelStateTensors()
		if err != nil {
			return nil, nil, err
		}
		out = append(out, own...)
	}
	return out, shapes, nil
}

// ShardedState implements accelerate.ShardedState: with SHARDED_STATE_DICT
// each process writes its share of the masters.
func (m *modelView) ShardedState() bool { return m.t.shardedStateDict() }

// ShardTensors implements accelerate.ShardedState: this process's ranges of
// the float32 masters.
func (m *modelView) ShardTensors() ([]safetensors.Tensor, map[string][]int, error) {
	t := m.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.shard == nil {
		return nil, nil, errors.New("gomlx: the model is not built")
	}
	var out []safetensors.Tensor
	shapes := map[string][]int{}
	if !t.shard.writesShares() { // another node's copy of the first node's shares
		return out, shapes, nil
	}
	for _, s := range t.shard.segs {
		shapes[s.p.name] = s.p.shape
		out = append(out, safetensors.FromFloat32s(checkpoint.RangeName(s.p.name, s.from, s.to), []int{s.to - s.from}, t.shard.own[s.at:s.at+s.to-s.from]))
	}
	return out, shapes, nil
}
