package gomlx

import (
	"errors"
	"fmt"
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // GoMLX's graph API reads best dot-imported
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/context/initializers"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"
)

// AdamWScope is the scope of AdamW's state in the masters' context (and
// in optimizer.safetensors): each variable's moments under the variable's
// own scope, and the optimizer's step count.
const AdamWScope = "/adamw"

// Decay says whether a trainable variable gets weight decay (PyTorch's
// parameter groups): it sees the variable's scope and name
// ("/model/h0/fc/weights") and its dimensions.
type Decay func(name string, dims []int) bool

// DecayMatrices decays the variables of two or more dimensions (weight
// matrices, embeddings) and not biases or normalization gains: nanoGPT's
// and most transformers' rule.
func DecayMatrices(_ string, dims []int) bool { return len(dims) >= 2 }

// DecayAll decays every trainable variable (torch.optim.AdamW with one
// parameter group).
func DecayAll(string, []int) bool { return true }

// AdamWOptimizer is torch.optim.AdamW for GoMLX models under a Trainer:
// decoupled weight decay on the variables a Decay selects, then Adam's
// update with bias correction, in float32:
//
//	p ← p·(1 − lr·wd)                        (decayed variables only)
//	m ← β1·m + (1 − β1)·g,  v ← β2·v + (1 − β2)·g²
//	p ← p − lr/(1 − β1ᵗ) · m / (√v/√(1 − β2ᵗ) + ε)
//
// GoMLX v0.26.0's Adam decays every trainable variable (biases and
// normalization gains included), puts ε inside the bias correction, and
// its "adamw" has no decay unless configured. The learning rate is the
// masters' context's learning-rate variable: a schedule
// (WithLRSchedule) sets it before every optimizer step.
type AdamWOptimizer struct {
	lr, beta1, beta2, eps, wd float64
	decay                     Decay
	err                       error
}

// AdamW returns torch.optim.AdamW's defaults: learning rate 1e-3, betas
// (0.9, 0.999), ε 1e-8, weight decay 0.01 on every variable.
func AdamW() *AdamWOptimizer {
	return &AdamWOptimizer{lr: 1e-3, beta1: 0.9, beta2: 0.999, eps: 1e-8, wd: 0.01, decay: DecayAll}
}

// LearningRate sets the learning rate (a schedule overrides it).
func (o *AdamWOptimizer) LearningRate(lr float64) *AdamWOptimizer {
	if !(lr >= 0) || math.IsInf(lr, 0) {
		o.fail(fmt.Errorf("learning rate %v: want a finite number ≥ 0", lr))
	}
	o.lr = lr
	return o
}

// Betas sets β1 and β2.
func (o *AdamWOptimizer) Betas(beta1, beta2 float64) *AdamWOptimizer {
	if !(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1) {
		o.fail(fmt.Errorf("betas (%v, %v): each must be in [0, 1)", beta1, beta2))
	}
	o.beta1, o.beta2 = beta1, beta2
	return o
}

// Epsilon sets ε.
func (o *AdamWOptimizer) Epsilon(eps float64) *AdamWOptimizer {
	if !(eps >= 0) || math.IsInf(eps, 0) {
		o.fail(fmt.Errorf("epsilon %v: want a finite number ≥ 0", eps))
	}
	o.eps = eps
	return o
}

// WeightDecay sets the decay coefficient and which variables get it (nil:
// every variable).
func (o *AdamWOptimizer) WeightDecay(wd float64, which Decay) *AdamWOptimizer {
	if !(wd >= 0) || math.IsInf(wd, 0) {
		o.fail(fmt.Errorf("weight decay %v: want a finite number ≥ 0", wd))
	}
	if which == nil {
		which = DecayAll
	}
	o.wd, o.decay = wd, which
	return o
}

// Done returns the optimizer (the builder itself: GoMLX's builders end
// with Done).
func (o *AdamWOptimizer) Done() *AdamWOptimizer { return o }

func (o *AdamWOptimizer) fail(err error) {
	if o.err == nil {
		o.err = fmt.Errorf("gomlx: AdamW: %w", err)
	}
}

// Err is the first bad setting, if any (NewTrainer returns it).
func (o *AdamWOptimizer) Err() error { return o.err }

// Decayed reports whether the variable named name with dims gets weight
// decay.
func (o *AdamWOptimizer) Decayed(name string, dims []int) bool {
	return o.wd > 0 && o.decay(name, dims)
}

// UpdateGraph implements optimizers.Interface: under a Trainer it is never
// called with a loss (the Trainer's own optimizer computes the gradients
// and this one applies them).
func (o *AdamWOptimizer) UpdateGraph(ctx *context.Context, g *Graph, loss *Node) {
	grads := ctx.BuildTrainableVariablesGradientsGraph(loss)
	o.UpdateGraphWithGradients(ctx, grads, loss.DType())
}

// UpdateGraphWithGradients implements train.OptimizeWithGradients: grads
// are the gradients of ctx's trainable variables the graph uses, in
// ctx.IterVariables order.
func (o *AdamWOptimizer) UpdateGraphWithGradients(ctx *context.Context, grads []*Node, _ dtypes.DType) {
	if len(grads) == 0 {
		panic(errors.New("gomlx: AdamW: no gradients: the model has no trainable variables"))
	}
	g := grads[0].Graph()
	const dtype = dtypes.Float32
	lr := optimizers.LearningRateVar(ctx, dtype, o.lr).ValueGraph(g)
	_ = optimizers.IncrementGlobalStepGraph(ctx, g, dtypes.Int64)
	state := ctx.Checked(false).InAbsPath(AdamWScope)
	t := optimizers.IncrementGlobalStepGraph(state, g, dtype) // this optimizer's own step, from 1
	beta1, beta2 := Scalar(g, dtype, o.beta1), Scalar(g, dtype, o.beta2)
	bc1 := OneMinus(Pow(beta1, t))
	bc2Sqrt := Sqrt(OneMinus(Pow(beta2, t)))
	stepSize := Div(lr, bc1)
	eps := Scalar(g, dtype, o.eps)
	i := 0
	for v := range ctx.IterVariables() {
		if !v.Trainable || !v.InUseByGraph(g) {
			continue
		}
		if i >= len(grads) {
			panic(fmt.Errorf("gomlx: AdamW: %d gradients for more trainable variables", len(grads)))
		}
		grad := grads[i]
		i++
		if grad.DType() != dtype {
			grad = ConvertDType(grad, dtype)
		}
		p := v.ValueGraph(g)
		if p.DType() != dtype {
			panic(fmt.Errorf("gomlx: AdamW: %s is %s: AdamW updates float32 masters", v.ScopeAndName(), p.DType()))
		}
		vs := state.InAbsPath(AdamWScope + v.Scope()).WithInitializer(initializers.Zero)
		mVar := vs.VariableWithShape(v.Name()+"_exp_avg", v.Shape()).SetTrainable(false)
		vVar := vs.VariableWithShape(v.Name()+"_exp_avg_sq", v.Shape()).SetTrainable(false)
		m := Add(Mul(beta1, mVar.ValueGraph(g)), Mul(OneMinus(beta1), grad))
		sq := Add(Mul(beta2, vVar.ValueGraph(g)), Mul(OneMinus(beta2), Square(grad)))
		mVar.SetValueGraph(m)
		vVar.SetValueGraph(sq)
		name, dims := v.ScopeAndName(), v.Shape().Dimensions
		if n, d, ok := wholeOf(ctx, v); ok { // a sharded Trainer's range of a variable (shard.go)
			name, dims = n, d
		}
		if o.Decayed(name, dims) {
			p = Mul(p, OneMinus(Mul(lr, Scalar(g, dtype, o.wd))))
		}
		denom := Add(Div(Sqrt(sq), bc2Sqrt), eps)
		v.SetValueGraph(Sub(p, Mul(stepSize, Div(m, denom))))
	}
	if i != len(grads) {
		panic(fmt.Errorf("gomlx: AdamW: %d gradients for %d trainable variables", len(grads), i))
	}
}

// Clear implements optimizers.Interface: it forgets the moments and the
// step count.
func (o *AdamWOptimizer) Clear(ctx *context.Context) error {
	return ctx.Checked(false).InAbsPath(AdamWScope).DeleteVariablesInScope()
}
