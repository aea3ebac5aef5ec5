package gomlx

import (
	"errors"
	"fmt"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // GoMLX's graph API reads best dot-imported
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/context/initializers"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"
)

// ddpOptimizer is the optimizer the Trainer gives train.Trainer: in the
// training graph it computes the gradients and leaves them in variables,
// for the host to reduce and the update graph to apply (see afterStep).
type ddpOptimizer struct{ t *Trainer }

// UpdateGraph implements optimizers.Interface.
func (o *ddpOptimizer) UpdateGraph(ctx *context.Context, g *Graph, loss *Node) {
	t := o.t
	if !loss.Shape().IsScalar() {
		panic(fmt.Errorf("gomlx: the loss must be a scalar, got shape %s", loss.Shape()))
	}
	t.mustBuild(trainableInUse(ctx, g)) // the model function built it; this checks the variables
	if len(t.params) == 0 {
		panic(errors.New("gomlx: the model has no trainable variables: there is nothing to train"))
	}
	if t.fused {
		t.fusedUpdate(ctx, loss)
		return
	}
	if t.scaleVar != nil {
		loss = Mul(loss, ConvertDType(t.scaleVar.ValueGraph(g), loss.DType()))
	}
	grads := ctx.BuildTrainableVariablesGradientsGraph(loss)
	for i, p := range t.params {
		gr := grads[i]
		if gr.DType() != dtypes.Float32 {
			gr = ConvertDType(gr, dtypes.Float32)
		}
		p.grad.SetValueGraph(gr)
	}
}

// Clear implements optimizers.Interface: it clears the optimizer's state
// in the masters' context.
func (o *ddpOptimizer) Clear(ctx *context.Context) error {
	t := o.t
	t.mu.Lock()
	m := t.masters
	t.mu.Unlock()
	if m == nil {
		return nil
	}
	if c, ok := t.opt.(interface{ Clear(*context.Context) error }); ok {
		return c.Clear(m)
	}
	return nil
}

// trainableInUse lists the trainable variables g uses, in the order
// BuildTrainableVariablesGradientsGraph gives their gradients.
func trainableInUse(ctx *context.Context, g *Graph) []*context.Variable {
	var out []*context.Variable
	for v := range ctx.IterVariables() {
		if v.Trainable && v.InUseByGraph(g) {
			out = append(out, v)
		}
	}
	return out
}

// build runs inside the first training graph, once the model function
// created its variables: it initializes them, makes the gradient
// variables and the float32 masters, and wraps the model for
// Accelerate, which broadcasts process 0's values to every process (a
// collective: every process builds its first graph in its first step).
// Later graphs (other batch shapes) must use the same variables.
func (t *Trainer) build(vars []*context.Variable) error {
	t.mu.Lock()
	if t.built {
		defer t.mu.Unlock()
		if len(vars) != len(t.params) {
			return fmt.Errorf("gomlx: this training graph uses %d trainable variables, the first one used %d: a model must use the same variables whatever the batch", len(vars), len(t.params))
		}
		for i, v := range vars {
			if v != t.params[i].v {
				return fmt.Errorf("gomlx: this training graph uses the trainable variable %s where the first one used %s: a model must use the same variables whatever the batch", v.ScopeAndName(), t.params[i].name)
			}
		}
		return nil
	}
	t.mu.Unlock()
	if len(vars) == 0 {
		return errors.New("gomlx: the model has no trainable variables: there is nothing to train")
	}
	if err := t.ctx.InitializeVariables(t.backend, nil); err != nil {
		return fmt.Errorf("gomlx: initializing the model's variables: %w", err)
	}
	ctx := t.ctx.Checked(false)
	t.mu.Lock()
	masters := t.masters // LoadState may have made it, with the optimizer's state
	t.mu.Unlock()
	if masters == nil {
		masters = context.New()
	}
	if !t.fused {
		ctx.EnumerateParams(func(scope, key string, value any) { masters.InAbsPath(scope).SetParam(key, value) })
	}
	params := make([]*param, len(vars))
	for i, v := range vars {
		if !v.DType().IsFloat() {
			return fmt.Errorf("gomlx: the trainable variable %s is %s: only floating-point variables can be trained", v.ScopeAndName(), v.DType())
		}
		dims := append([]int(nil), v.Shape().Dimensions...)
		p := &param{name: v.ScopeAndName(), v: v, shape: dims, host: make([]float32, v.Shape().Size()),
			hostGrad: make([]float32, v.Shape().Size())} // DDP's view of the gradients, also in one graph

		val, err := v.Value()
		if err != nil {
			return fmt.Errorf("gomlx: reading %s: %w", p.name, err)
		}
		if err := toHost(val, p.host); err != nil {
			return fmt.Errorf("gomlx: reading %s: %w", p.name, err)
		}
		params[i] = p
		if t.fused {
			p.master = v // the model's float32 variable is its own master
			continue
		}
		p.grad = ctx.InAbsPath(gradScope+v.Scope()).WithInitializer(initializers.Zero).
			VariableWithShape(v.Name(), shapes.Make(dtypes.Float32, dims...)).SetTrainable(false)
		if t.sharded {
			continue // the masters of this process's share only (buildShards)
		}
		p.master = masters.Checked(false).InAbsPath(v.Scope()).
			VariableWithValue(v.Name(), tensors.FromFlatDataAndDimensions(append([]float32(nil), p.host...), dims...))
	}
	var shard *shardLayout
	if t.sharded {
		var err error
		if shard, err = t.buildShards(params, masters); err != nil {
			return err
		}
	}
	if t.scaler != nil {
		t.scaleVar = ctx.InAbsPath(scaleScope).VariableWithValue(scaleName, float32(t.scaler.GetScale())).SetTrainable(false)
	}
	if err := zeroHalfPrecision(params); err != nil {
		return err
	}
	t.mu.Lock()
	t.params, t.masters, t.shard, t.built = params, masters, shard, true
	pending := t.pending
	t.pending = nil
	t.mu.Unlock()
	if pending != nil {
		if err := (&optimizerState{t: t}).LoadStateTensors(pending); err != nil {
			return fmt.Errorf("gomlx: loading the optimizer state: %w", err)
		}
	}
	// Broadcast process 0's masters and load a checkpoint LoadState read
	// before the model existed; both end in the model's ParametersLoaded,
	// which writes the model's variables from the masters.
	d, err := t.deferred.Build()
	if err != nil {
		return fmt.Errorf("gomlx: preparing the model: %w", err)
	}
	t.mu.Lock()
	t.ddp = d
	t.mu.Unlock()
	if err := t.model.ParametersLoaded(); err != nil {
		return err
	}
	return t.prepareLearningRate()
}

// mustBuild is build in GoMLX's graph building, where only a panic can
// report an error; the error is kept for TrainStep and Eval to return.
func (t *Trainer) mustBuild(vars []*context.Variable) {
	if err := t.build(vars); err != nil {
		t.mu.Lock()
		if t.buildErr == nil {
			t.buildErr = err
		}
		t.mu.Unlock()
		panic(err)
	}
}

// learningRateVar is where GoMLX optimizers and schedules keep the
// learning rate.
func learningRateVar(ctx *context.Context) *context.Variable {
	return ctx.GetVariableByScopeAndName("/"+optimizers.Scope, optimizers.ParamLearningRate)
}

// zeroHalfPrecision refuses a model whose 16-bit trainable variables all
// start at zero: GoMLX v0.26.0's RandomNormalFn (and other initializers)
// silently give zeros for dtypes other than float32 and float64, and such
// a model never learns (its loss stays where it starts). Create the
// variables in float32 and convert them in the graph (ComputeDType).
func zeroHalfPrecision(params []*param) error {
	var half []string
	for _, p := range params {
		if d := p.v.DType(); d != dtypes.BFloat16 && d != dtypes.Float16 {
			continue
		}
		for _, x := range p.host {
			if x != 0 {
				return nil
			}
		}
		half = append(half, p.name)
	}
	if len(half) == 0 {
		return nil
	}
	return fmt.Errorf("gomlx: every 16-bit trainable variable of the model is zero after initialization (%s, ...): GoMLX %s's random "+
		"initializers give zeros for dtypes other than float32 and float64, and such a model cannot learn; create the variables in "+
		"float32 and convert them to gomlx.ComputeDType(ctx) in the graph", half[0], GoMLXVersion)
}
