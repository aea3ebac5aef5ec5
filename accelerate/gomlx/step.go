package gomlx

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // GoMLX's graph API reads best dot-imported
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"
)

// afterStep is the host half of a training step, after the training graph
// left this micro-batch's gradients in the gradient variables: Accelerate's
// Accumulate (the gradients are averaged over the accumulation steps on
// the host; the n-th micro-batch all-reduces them), then on a synchronising
// step the loss scaler, clipping and the update graph.
func (t *Trainer) afterStep() error {
	t.mu.Lock()
	built, d := t.built, t.ddp
	t.mu.Unlock()
	if !built || d == nil {
		return errors.New("gomlx: the training graph did not build the model (was the optimizer replaced?)")
	}
	if t.fused {
		return t.afterFusedStep(d)
	}
	if t.shard != nil {
		return t.afterShardedStep()
	}
	accSteps := t.acc.GradientAccumulationSteps()
	onHost := t.needsHost(accSteps)
	start := time.Now()
	var toHost time.Duration
	err := t.acc.Accumulate(d, func() error {
		if !onHost {
			return nil // one process, nothing between the two graphs: the gradients stay on the device
		}
		err := t.collect(accSteps)
		toHost = time.Since(start)
		return err
	})
	t.mu.Lock()
	t.stats.MicroSteps++
	t.stats.ToHost += toHost
	if t.acc.NumProcesses() > 1 && t.acc.SyncGradientsNow() {
		t.stats.AllReduce += time.Since(start) - toHost
	}
	t.mu.Unlock()
	if err != nil {
		return fmt.Errorf("gomlx: %w", err)
	}
	if !t.acc.SyncGradientsNow() {
		return nil
	}
	if !onHost {
		return t.applyFromDevice()
	}
	if t.scaler != nil {
		// fp16: the gradients are unscaled and clipped on the host, and
		// the scaler skips the step if they overflowed.
		grads := t.model.Gradients32()
		if t.scaler.IsEnabled() && !t.scaler.Unscaled() {
			t.scaler.Unscale32(grads)
		}
		if c := t.cfg; c.clipNorm > 0 {
			norm, err := t.acc.ClipGradNorm(d, c.clipNorm, c.clipNormType)
			if err != nil {
				return fmt.Errorf("gomlx: %w", err)
			}
			t.mu.Lock()
			t.gradNorm = norm
			t.mu.Unlock()
		} else if c.clipValue > 0 {
			if err := t.acc.ClipGradValue(d, c.clipValue); err != nil {
				return fmt.Errorf("gomlx: %w", err)
			}
		}
		err := t.scaledStep(t.applyFromHost)
		t.zeroHostGrads()
		if err != nil {
			return err
		}
		return t.checkDivergence()
	}
	if err := t.applyFromHost(); err != nil {
		return err
	}
	t.zeroHostGrads()
	return t.checkDivergence()
}

// scaledStep runs apply unless fp16's scaler found inf or NaN in the
// gradients it unscaled, counts a skipped step, and gives the training
// graph the scale the scaler moved to.
func (t *Trainer) scaledStep(apply func() error) error {
	var applyErr error
	stepped, err := t.scaler.Step(func() { applyErr = apply() })
	if err == nil {
		err = applyErr
	}
	if err == nil && !stepped {
		t.mu.Lock()
		t.skipped++
		t.mu.Unlock()
	}
	if err == nil {
		err = t.scaleVar.SetValue(tensors.FromScalar(float32(t.scaler.GetScale())))
	}
	if err != nil {
		return fmt.Errorf("gomlx: %w", err)
	}
	return nil
}

// needsHost reports whether the gradients must go through the host: to be
// all-reduced, accumulated, unscaled or checked. Clipping does not need
// it: the update graph clips (see clipGraph).
func (t *Trainer) needsHost(accSteps int) bool {
	return t.acc.NumProcesses() > 1 || accSteps > 1 || t.scaler != nil || t.checkEvery() > 0
}

// clipsInGraph reports whether the update graph clips the gradients:
// always, but with fp16's scaler, whose unscaled gradients are clipped on
// the host before it decides whether to step.
func (t *Trainer) clipsInGraph() bool {
	return t.scaler == nil && (t.cfg.clipNorm > 0 || t.cfg.clipValue > 0)
}

// collect adds this micro-batch's gradients, divided by the accumulation
// steps (Accelerate divides the loss), to the host gradients.
func (t *Trainer) collect(accSteps int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	scale := 1 / float32(accSteps)
	for _, p := range t.params {
		v, err := p.grad.Value()
		if err != nil {
			return fmt.Errorf("reading the gradient of %s: %w", p.name, err)
		}
		if accSteps == 1 {
			if err := toHost(v, p.hostGrad); err != nil {
				return fmt.Errorf("reading the gradient of %s: %w", p.name, err)
			}
			continue
		}
		err = tensors.ConstFlatData(v, func(flat []float32) {
			for i, g := range flat {
				p.hostGrad[i] += g * scale
			}
		})
		if err != nil {
			return fmt.Errorf("reading the gradient of %s: %w", p.name, err)
		}
	}
	return nil
}

func (t *Trainer) zeroHostGrads() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range t.params {
		clear(p.hostGrad)
	}
}

// applyFromHost runs the update graph with the host gradients.
func (t *Trainer) applyFromHost() error {
	t.mu.Lock()
	args := make([]any, len(t.params))
	for i, p := range t.params {
		args[i] = tensors.FromFlatDataAndDimensions(append([]float32(nil), p.hostGrad...), p.shape...)
	}
	t.mu.Unlock()
	return t.runApply(args)
}

// applyFromDevice runs the update graph with the gradients where the
// training graph left them.
func (t *Trainer) applyFromDevice() error {
	t.mu.Lock()
	args := make([]any, len(t.params))
	for i, p := range t.params {
		v, err := p.grad.Value()
		if err != nil {
			t.mu.Unlock()
			return fmt.Errorf("gomlx: reading the gradient of %s: %w", p.name, err)
		}
		args[i] = v
	}
	t.mu.Unlock()
	return t.runApply(args)
}

// runApply applies gradients (one tensor per parameter) with the
// optimizer to the masters, then writes the model's variables and the
// global step from them.
func (t *Trainer) runApply(grads []any) error {
	if len(grads) == 0 {
		return nil
	}
	lr, err := t.setLearningRate()
	if err != nil {
		return err
	}
	exec, err := t.applyExec()
	if err != nil {
		return err
	}
	var out []*tensors.Tensor
	start := time.Now()
	if err := catch(func() { out = must(exec.Exec(grads...)) }); err != nil {
		return fmt.Errorf("gomlx: applying the gradients with the optimizer: %w", err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stats.Apply += time.Since(start)
	for i, p := range t.params {
		if err := p.v.SetValue(out[i]); err != nil {
			return fmt.Errorf("gomlx: setting %s: %w", p.name, err)
		}
	}
	if err := optimizers.GetGlobalStepVar(t.ctx).SetValue(out[len(t.params)]); err != nil {
		return fmt.Errorf("gomlx: setting the global step: %w", err)
	}
	if t.clipsInGraph() && t.cfg.clipNorm > 0 {
		t.gradNorm = shapes.ConvertTo[float64](out[len(t.params)+1].Value())
	}
	t.model.stale = true
	t.lr = lr
	t.steps++
	t.stats.Steps++
	return nil
}

// applyExec builds the update graph once: in the masters' context, the
// optimizer applies the gradients given as inputs to the masters (and
// keeps its state there); the graph returns the new masters in the
// model's dtypes, then the global step.
func (t *Trainer) applyExec() (*context.Exec, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.apply != nil {
		return t.apply, nil
	}
	params, cfg, clip := t.params, t.cfg, t.clipsInGraph()
	var exec *context.Exec
	err := catch(func() {
		exec = must(context.NewExec(t.backend, t.masters.Checked(false), func(ctx *context.Context, grads []*Node) []*Node {
			g := grads[0].Graph()
			for _, p := range params {
				_ = p.master.ValueGraph(g) // the optimizer updates the trainable variables the graph uses
			}
			var norm *Node
			if clip {
				grads, norm = clipGraph(grads, cfg)
			}
			t.opt.UpdateGraphWithGradients(ctx, grads, dtypes.Float32)
			out := make([]*Node, 0, len(params)+2)
			for _, p := range params {
				out = append(out, ConvertDType(p.master.ValueGraph(g), p.v.DType()))
			}
			out = append(out, optimizers.GetGlobalStepVar(ctx).ValueGraph(g))
			if norm != nil {
				out = append(out, norm)
			}
			return out
		}))
	})
	if err != nil {
		return nil, fmt.Errorf("gomlx: building the update graph: %w", err)
	}
	t.apply = exec.WithName("goaccel update")
	return t.apply, nil
}

// clipGraph clips grads as Accelerator.ClipGradNorm or ClipGradValue do,
// and returns the total norm (nil when clipping by value).
func clipGraph(grads []*Node, c config) ([]*Node, *Node) {
	g := grads[0].Graph()
	out := make([]*Node, len(grads))
	if c.clipNorm <= 0 {
		for i, gr := range grads {
			out[i] = ClipScalar(gr, -c.clipValue, c.clipValue)
		}
		return out, nil
	}
	var total *Node
	switch p := c.clipNormType; {
	case math.IsInf(p, 1):
		for _, gr := range grads {
			m := ReduceAllMax(Abs(gr))
			if total == nil {
				total = m
			} else {
				total = Max(total, m)
			}
		}
	case p == 2:
		for _, gr := range grads {
			total = addOrFirst(total, ReduceAllSum(Square(gr)))
		}
		total = Sqrt(total)
	default:
		for _, gr := range grads {
			total = addOrFirst(total, ReduceAllSum(Pow(Abs(gr), Scalar(g, gr.DType(), p))))
		}
		total = Pow(total, Scalar(g, total.DType(), 1/p))
	}
	coef := MinScalar(Div(Scalar(g, total.DType(), c.clipNorm), AddScalar(total, 1e-6)), 1)
	for i, gr := range grads {
		out[i] = Mul(gr, ConvertDType(coef, gr.DType()))
	}
	return out, total
}

func addOrFirst(sum, x *Node) *Node {
	if sum == nil {
		return x
	}
	return Add(sum, x)
}

// GradNorm is the total norm of the last optimizer step's gradients
// before WithClipGradNorm clipped them (0 without clipping by norm).
func (t *Trainer) GradNorm() float64 {
	if t.fused {
		return t.fusedGradNorm()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.gradNorm
}

// setLearningRate gives the optimizer the rate of the next optimizer step
// (the global step's): the schedule's (WithLRSchedule), returned, or the
// one a GoMLX schedule set in the model's context (GoMLX's schedules run
// in the training graph; 0 is returned then).
func (t *Trainer) setLearningRate() (float64, error) {
	s := t.cfg.schedule
	if s == nil {
		if !t.fused {
			t.syncLearningRate()
		}
		return 0, nil
	}
	step := int(t.GlobalStep())
	lr := s.LearningRate(step)
	if math.IsNaN(lr) || math.IsInf(lr, 0) || lr < 0 {
		return 0, fmt.Errorf("gomlx: the learning-rate schedule gave %v for optimizer step %d: want a finite rate ≥ 0", lr, step)
	}
	t.mu.Lock()
	masters := t.masters
	t.mu.Unlock()
	v := tensors.FromScalar(float32(lr))
	if dst := learningRateVar(masters); dst != nil {
		return lr, dst.SetValue(v)
	}
	masters.Checked(false).In(optimizers.Scope).VariableWithValue(optimizers.ParamLearningRate, v).SetTrainable(false)
	return lr, nil
}

// LearningRate is the rate the last optimizer step used when a schedule
// sets it (WithLRSchedule), and otherwise 0.
func (t *Trainer) LearningRate() float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lr
}

// syncLearningRate gives the masters the learning rate a schedule set in
// the model's context (GoMLX's schedules run in the training graph).
func (t *Trainer) syncLearningRate() {
	src := learningRateVar(t.ctx)
	if src == nil || !src.HasValue() {
		return
	}
	v, err := src.Value()
	if err != nil {
		return
	}
	t.mu.Lock()
	masters := t.masters
	t.mu.Unlock()
	dst := learningRateVar(masters)
	c, err := v.LocalClone()
	if err != nil {
		return
	}
	if dst == nil {
		masters.Checked(false).In(optimizers.Scope).VariableWithValue(optimizers.ParamLearningRate, c).SetTrainable(false)
		return
	}
	_ = dst.SetValue(c)
}
