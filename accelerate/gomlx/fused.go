package gomlx

import (
	"fmt"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // GoMLX's graph API reads best dot-imported
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"

	"github.com/goaccel/goaccel/accelerate/ddp"
)

// One graph a step. When nothing has to happen between computing the
// gradients and applying them — one process, no accumulation, no fp16
// loss scaler, no divergence check — and the model computes in float32,
// the Trainer applies the optimizer inside GoMLX's training graph, as
// GoMLX's own Trainer does: the model's variables are the masters (the
// masters' context is the model's), the optimizer keeps its state in the
// model's context under the scopes it would use in the masters', and
// clipping and the learning rate are in the same graph. That saves the
// second graph's launch, the gradients' round trip through variables and
// the masters' copy (a small GPT's step 4–7% faster, bench/gpt).
// Checkpoints name everything as the two-graph step does, so either loads
// the other's.

// fusedPossible reports whether the Trainer's configuration allows the
// one-graph step.
func (t *Trainer) fusedPossible() bool {
	return !t.cfg.separateUpdate && t.acc.NumProcesses() == 1 && t.acc.GradientAccumulationSteps() == 1 &&
		t.scaler == nil && t.checkEvery() == 0 && t.compute == dtypes.Float32
}

// gradNormName is where the one-graph step leaves the gradients' norm.
const gradNormName = "grad_norm"

// fusedUpdate is ddpOptimizer.UpdateGraph in a one-graph step: the
// gradients, clipped, applied by the optimizer to the model's variables.
// The variables the optimizer creates are its state (StateTensors saves
// them as the optimizer's, not the model's).
func (t *Trainer) fusedUpdate(ctx *context.Context, loss *Node) {
	grads := ctx.BuildTrainableVariablesGradientsGraph(loss)
	for i, gr := range grads {
		if gr.DType() != dtypes.Float32 {
			grads[i] = ConvertDType(gr, dtypes.Float32)
		}
	}
	if t.clipsInGraph() {
		var norm *Node
		grads, norm = clipGraph(grads, t.cfg)
		if norm != nil {
			ctx.InAbsPath(scaleScope).Checked(false).VariableWithValue(gradNormName, float32(0)).
				SetTrainable(false).SetValueGraph(ConvertDType(norm, dtypes.Float32))
		}
	}
	before := map[string]bool{}
	for v := range ctx.IterVariables() {
		before[v.ScopeAndName()] = true
	}
	t.opt.UpdateGraphWithGradients(ctx, grads, dtypes.Float32)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.optState == nil {
		t.optState = map[string]bool{}
	}
	for v := range ctx.IterVariables() {
		if name := v.ScopeAndName(); !before[name] && !v.Trainable {
			t.optState[name] = true
		}
	}
	// The global step may exist before (train.Trainer reads it); it is the
	// optimizer's, as in the masters' context.
	t.optState[optimizers.GetGlobalStepVar(ctx).ScopeAndName()] = true
}

// fusedGradNorm reads the norm the one-graph step left.
func (t *Trainer) fusedGradNorm() float64 {
	v := t.ctx.GetVariableByScopeAndName(scaleScope, gradNormName)
	if v == nil || !v.HasValue() {
		return 0
	}
	val, err := v.Value()
	if err != nil {
		return 0
	}
	return shapes.ConvertTo[float64](val.Value())
}

// isOptimizerState reports whether a non-trainable variable of the
// masters' context is the optimizer's (saved unprefixed) in a one-graph
// Trainer, where that context is the model's.
func (t *Trainer) isOptimizerState(v *context.Variable) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.optState[v.ScopeAndName()]
}

// afterFusedStep is the host half of a one-graph step: bookkeeping, and
// the learning rate of the next step.
func (t *Trainer) afterFusedStep(d *ddp.DDP) error {
	if err := t.acc.Accumulate(d, func() error { return nil }); err != nil {
		return fmt.Errorf("gomlx: %w", err)
	}
	t.mu.Lock()
	t.stats.MicroSteps++
	t.stats.Steps++
	t.steps++
	t.model.stale = true
	t.lr = t.nextLR
	t.mu.Unlock()
	return t.prepareLearningRate()
}

// prepareLearningRate sets, in a one-graph Trainer, the rate of the next
// optimizer step (the graph reads it when it runs).
func (t *Trainer) prepareLearningRate() error {
	if !t.fused || t.cfg.schedule == nil {
		return nil
	}
	lr, err := t.setLearningRate()
	t.mu.Lock()
	t.nextLR = lr
	t.mu.Unlock()
	return err
}
