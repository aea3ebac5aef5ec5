package gomlx

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // GoMLX's graph API reads best dot-imported
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/train"
	"github.com/gomlx/gomlx/pkg/ml/train/metrics"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"

	"github.com/goaccel/goaccel/accelerate"
	"github.com/goaccel/goaccel/accelerate/amp"
	"github.com/goaccel/goaccel/accelerate/ddp"
	"github.com/goaccel/goaccel/accelerate/safetensors"
)

// Scopes of the variables the Trainer adds to the model's context.
const (
	gradScope  = "/goaccel/gradients" // each trainable variable's gradient, float32
	scaleScope = "/goaccel"           // the fp16 loss scale
	scaleName  = "loss_scale"
)

// Trainer trains a GoMLX model under an Accelerator (see the package doc).
// Its methods must be called by every process, in the same order.
type Trainer struct {
	acc     *accelerate.Accelerator
	backend backends.Backend
	ctx     *context.Context // the model's variables, as the user gave it
	trainer *train.Trainer
	opt     train.OptimizeWithGradients
	compute dtypes.DType // the dtype the model computes in
	reduce  dtypes.DType // the dtype sharded gradients are reduced in (policy.go)
	cfg     config
	scaler  *amp.GradScaler // fp16 only
	sharded bool            // FSDP SHARD_GRAD_OP or FULL_SHARD (shard.go)
	// fullShard: FSDP's FULL_SHARD, the parameters live as shares
	// between steps (fullshard.go).
	fullShard bool

	mu       sync.Mutex
	built    bool
	buildErr error
	params   []*param
	masters  *context.Context // float32 masters, the optimizer's state, the global step
	apply    *context.Exec
	predict  *context.Exec
	modelFn  train.ModelFn // wrapped (compute dtype, build)
	model    *modelView
	deferred *accelerate.DeferredModel
	ddp      *ddp.DDP
	scaleVar *context.Variable
	steps    int                  // optimizer steps taken by this Trainer (divergence checks)
	skipped  int                  // fp16 steps skipped for non-finite gradients
	gradNorm float64              // the last clipped step's total gradient norm
	lr       float64              // the last step's learning rate, when a schedule sets it
	nextLR   float64              // one graph a step: the next step's
	fused    bool                 // one graph a step (fused.go)
	optState map[string]bool      // one graph a step: the optimizer's variables in the model's context
	shard    *shardLayout         // FSDP: this process's share, once built
	pending  []safetensors.Tensor // FSDP: optimizer state LoadState read before the model built
	stats    Stats
}

// Stats is where a Trainer's host half of the steps spent its time.
type Stats struct {
	MicroSteps int           // training graphs run (TrainStep calls)
	Steps      int           // optimizer steps (update graphs run)
	ToHost     time.Duration // copying gradients to the host (and accumulating them)
	AllReduce  time.Duration // the all-reduces of the gradients, waiting for the slowest process included
	Apply      time.Duration // the update graph
	Gathers    int           // FSDP's FULL_SHARD: all-gathers of the parameters before a step
	Gather     time.Duration // their time, setting the model's variables included
}

// Stats returns the time spent so far between and after the training
// graphs; compare with the steps' time (train.Loop's TrainStepDurations).
func (t *Trainer) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stats
}

// param is one trainable variable of the model.
type param struct {
	name     string            // scope and name: its name in checkpoints
	v        *context.Variable // the model's variable, in the compute dtype
	grad     *context.Variable // its float32 gradient, set by the training graph
	master   *context.Variable // its float32 master, in Trainer.masters
	shape    []int
	host     []float32 // the master's values on the host (Parameters32)
	hostGrad []float32 // the gradient on the host (Gradients32)
}

// NewTrainer prepares a GoMLX training setup under acc: its arguments
// after acc are train.NewTrainer's. The optimizer must implement
// train.OptimizeWithGradients (SGD and Adam do): goaccel applies gradients
// it averaged across processes. The model's variables are created by the
// first training step (GoMLX builds them with the first graph); that step
// broadcasts process 0's initial values to every process first.
func NewTrainer(acc *accelerate.Accelerator, backend backends.Backend, ctx *context.Context,
	modelFn train.ModelFn, lossFn train.LossFn, optimizer optimizers.Interface,
	trainMetrics, evalMetrics []metrics.Interface, opts ...Option) (*Trainer, error) {
	if err := checkVersion(); err != nil {
		return nil, err
	}
	switch {
	case acc == nil:
		return nil, errors.New("gomlx: NewTrainer: nil Accelerator")
	case backend == nil:
		return nil, errors.New("gomlx: NewTrainer: nil backend (gomlx.Backend(acc.Device()) picks one)")
	case ctx == nil:
		return nil, errors.New("gomlx: NewTrainer: nil context")
	case modelFn == nil:
		return nil, errors.New("gomlx: NewTrainer: nil model function")
	case optimizer == nil:
		return nil, errors.New("gomlx: NewTrainer: nil optimizer")
	}
	opt, ok := optimizer.(train.OptimizeWithGradients)
	if !ok {
		return nil, fmt.Errorf("gomlx: NewTrainer: the optimizer %T cannot be prepared: goaccel applies the gradients it averaged across processes "+
			"with UpdateGraphWithGradients (train.OptimizeWithGradients), which it lacks; optimizers.StochasticGradientDescent and optimizers.Adam have it", optimizer)
	}
	if e, ok := optimizer.(interface{ Err() error }); ok && e.Err() != nil {
		return nil, e.Err()
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	t := &Trainer{acc: acc, backend: backend, ctx: ctx, opt: opt, cfg: cfg, compute: dtypes.Float32}
	switch mp := acc.MixedPrecision(); mp {
	case "no", "":
	case "bf16":
		t.compute = dtypes.BFloat16
	case "fp16":
		t.compute = dtypes.Float16
		t.scaler = acc.GradScaler()
	default:
		return nil, fmt.Errorf("gomlx: NewTrainer: mixed precision %q is not supported for GoMLX models (use \"no\", \"bf16\" or \"fp16\"; GoMLX has no fp8 arithmetic)", mp)
	}
	if t.compute != dtypes.Float32 && !backendHas(backend, t.compute) {
		return nil, fmt.Errorf("gomlx: NewTrainer: mixed precision %q: the %s backend cannot compute in %s; use mixed precision \"no\" or the XLA backend",
			acc.MixedPrecision(), backend.Name(), t.compute)
	}
	strategy, err := shardingStrategy(t)
	if err != nil {
		return nil, err
	}
	t.sharded, t.fullShard = strategy != 0, strategy.ShardsParameters()
	if err := t.applyPolicy(strategy); err != nil {
		return nil, err
	}
	ctx.InAbsPath(context.RootScope).SetParam(ParamComputeDType, t.compute.String())
	if t.fused = t.fusedPossible(); t.fused {
		t.masters = ctx
	}
	t.model = &modelView{t: t}
	if t.deferred, err = acc.PrepareDeferred(t.model); err != nil {
		return nil, err
	}
	if _, err := acc.Prepare(&optimizerState{t: t}); err != nil {
		return nil, err
	}
	// The model's context is used unchecked by the Trainer's graphs: the
	// first graph creates the variables, later ones (other batch shapes,
	// evaluation) reuse them, as train.Trainer does after its first graph.
	t.modelFn = t.wrapModel(modelFn)
	t.trainer = train.NewTrainer(backend, ctx.Checked(false), t.modelFn, lossFn, &ddpOptimizer{t: t}, trainMetrics, evalMetrics)
	return t, nil
}

// ParamComputeDType is the model context's hyperparameter holding the
// dtype the Trainer's model computes in (ComputeDType reads it).
const ParamComputeDType = "goaccel_compute_dtype"

// ComputeDType is the dtype a model function should create its
// floating-point variables in: float32, or with mixed precision bfloat16
// or float16 (the Trainer sets it in the model's context). A model whose
// inputs are floating point gets it from them anyway (the Trainer converts
// them); one that takes token ids needs it for its embeddings. Outside a
// Trainer it is float32.
func ComputeDType(ctx *context.Context) dtypes.DType {
	s := context.GetParamOr(ctx, ParamComputeDType, "")
	if s == "" {
		return dtypes.Float32
	}
	d, err := dtypes.DTypeString(s)
	if err != nil {
		return dtypes.Float32
	}
	return d
}

// backendHas reports whether backend can compute in dtype: GoMLX
// v0.26.0's pure-Go backend has bfloat16 arithmetic but no float16.
func backendHas(backend backends.Backend, dtype dtypes.DType) bool {
	name := strings.ToLower(backend.Name())
	pureGo := strings.Contains(name, "simplego") || name == "go"
	return !(pureGo && dtype == dtypes.Float16)
}

// wrapModel makes modelFn compute in the Trainer's dtype (floating-point
// inputs converted to it, predictions back to float32), and builds the
// Trainer once the first graph, for training or evaluation, has created
// the model's variables.
func (t *Trainer) wrapModel(modelFn train.ModelFn) train.ModelFn {
	return func(ctx *context.Context, spec any, inputs []*Node) []*Node {
		in := inputs
		if t.compute != dtypes.Float32 {
			in = make([]*Node, len(inputs))
			for i, x := range inputs {
				in[i] = x
				if x.DType().IsFloat() && x.DType() != t.compute {
					in[i] = ConvertDType(x, t.compute)
				}
			}
		}
		out := modelFn(ctx, spec, in)
		if t.compute != dtypes.Float32 {
			for i, y := range out {
				if y.DType().IsFloat() && y.DType() != dtypes.Float32 {
					out[i] = ConvertDType(y, dtypes.Float32)
				}
			}
			t.lossTermsToFloat32(ctx, in[0].Graph())
		}
		if len(inputs) > 0 {
			t.mustBuild(trainableInUse(ctx, inputs[0].Graph()))
		}
		return out
	}
}

// lossTermsToFloat32 converts the loss terms the model added (its layers'
// regularizers, in the compute dtype) to float32, the dtype of the loss the
// trainer adds to them.
func (t *Trainer) lossTermsToFloat32(ctx *context.Context, g *Graph) {
	tc := ctx.InAbsPath(train.TrainerAbsoluteScope)
	if v, found := tc.GetGraphParam(g, train.TrainerLossGraphParamKey); found {
		if n, ok := v.(*Node); ok && n != nil && n.DType() != dtypes.Float32 {
			tc.SetGraphParam(g, train.TrainerLossGraphParamKey, ConvertDType(n, dtypes.Float32))
		}
	}
}

// Trainer returns GoMLX's train.Trainer underneath, for train.NewLoop and
// GoMLX's plotting and progress packages. Its TrainStep computes gradients
// only: train through Trainer.TrainStep or a loop from NewLoop.
func (t *Trainer) Trainer() *train.Trainer { return t.trainer }

// Context returns the model's context (variables in the compute dtype).
func (t *Trainer) Context() *context.Context { return t.ctx }

// Masters returns the context of the float32 masters, the optimizer's
// state and the global step (nil before the first step). With FSDP's
// SHARD_GRAD_OP it holds this process's share only (variables named
// "name[from:to]"); MasterValues has the whole masters.
func (t *Trainer) Masters() *context.Context {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.masters
}

// MasterValues returns the whole float32 masters of the trainable
// variables by scope and name, sharded or not: copies, the same on every
// process (nil before the first step).
func (t *Trainer) MasterValues() map[string][]float32 {
	names := t.model.ParameterNames()
	out := make(map[string][]float32, len(names))
	for i, p := range t.model.Parameters32() {
		out[names[i]] = append([]float32(nil), p...)
	}
	return out
}

// Accelerator returns the Accelerator the Trainer was prepared with.
func (t *Trainer) Accelerator() *accelerate.Accelerator { return t.acc }

// ComputeDType is the dtype the model computes in (Float32, or BFloat16 and
// Float16 with mixed precision).
func (t *Trainer) ComputeDType() dtypes.DType { return t.compute }

// GlobalStep is the number of optimizer steps of the model (restored by
// LoadState).
func (t *Trainer) GlobalStep() int64 { return t.trainer.GlobalStep() }

// Model is the model as Accelerator.SaveModel and accelerate.LoadModel
// take it: the float32 masters, named by scope and variable. It has no
// parameters before the model is built (the first step or evaluation).
func (t *Trainer) Model() ddp.Model32 { return t.model }

// DDP returns the wrapped model (nil before the first step): its Stats
// count what the all-reduces sent.
func (t *Trainer) DDP() *ddp.DDP { return t.deferred.DDP() }

// SkippedSteps counts the fp16 steps skipped because their gradients
// overflowed.
func (t *Trainer) SkippedSteps() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.skipped
}

// TrainStep runs one training step on this process's part of a global
// batch (see ShardDataset): the gradients are computed, then accumulated,
// all-reduced, clipped and applied as the package doc says. It returns the
// training metrics of train.Trainer.TrainStep (this process's).
func (t *Trainer) TrainStep(spec any, inputs, labels []*tensors.Tensor) ([]*tensors.Tensor, error) {
	if err := t.gather(); err != nil {
		return nil, err
	}
	m, err := t.trainer.TrainStep(spec, inputs, labels)
	if err != nil {
		return nil, t.stepError(err)
	}
	if err := t.afterStep(); err != nil {
		return nil, err
	}
	return m, nil
}

// stepError prefers the error of the Trainer's own set-up (made inside
// GoMLX's graph building, where only a panic can report it).
func (t *Trainer) stepError(err error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.buildErr != nil {
		return t.buildErr
	}
	return err
}
