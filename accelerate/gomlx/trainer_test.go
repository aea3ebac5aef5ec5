package gomlx

import (
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/context/initializers"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"

	"github.com/goaccel/goaccel/accelerate"
	"github.com/goaccel/goaccel/accelerate/amp"
	"github.com/goaccel/goaccel/accelerate/kwargs"
	"github.com/goaccel/goaccel/accelerate/safetensors"
)

// newAccelerator makes this process's Accelerator (a single process: the
// test binary runs without a launcher's environment), reset afterwards.
func newAccelerator(t testing.TB, opts ...accelerate.Option) *accelerate.Accelerator {
	t.Helper()
	accelerate.ResetState()
	acc, err := accelerate.NewAccelerator(append([]accelerate.Option{accelerate.WithLiveChart(false)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(accelerate.ResetState)
	return acc
}

// One process, no accumulation: the two-graph step is GoMLX's one-graph
// step, to the bit.
func TestTrainStepMatchesGoMLX(t *testing.T) {
	const batch, steps = 32, 12
	wantLosses, wantVars := referenceRun(t, batch, steps)

	acc := newAccelerator(t)
	ctx := toyContext()
	tr, err := NewTrainer(acc, pureGo(t), ctx, toyModel, toyLoss, toyOptimizer(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ds := &toyDataset{d: newToyData(), batch: batch}
	for i := 0; i < steps; i++ {
		_, in, lb, _ := ds.Yield()
		m, err := tr.TrainStep(nil, in, lb)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := float64(tensors.ToScalar[float32](m[0])); got != wantLosses[i] {
			t.Fatalf("step %d: loss %v, GoMLX's trainer %v", i, got, wantLosses[i])
		}
	}
	got := trainableValues(t, ctx)
	masters := trainableValues(t, tr.Masters())
	for name, want := range wantVars {
		if d := maxDiff(got[name], want); d != 0 {
			t.Errorf("%s differs from GoMLX's trainer by %g", name, d)
		}
		if d := maxDiff(masters[name], want); d != 0 {
			t.Errorf("master %s differs from GoMLX's trainer by %g", name, d)
		}
	}
	if tr.GlobalStep() != steps || acc.Step() != steps {
		t.Errorf("global step %d, accelerator step %d; want %d", tr.GlobalStep(), acc.Step(), steps)
	}
}

// Accumulating two micro-batches of 16 is one batch of 32: the gradients
// are averaged on the host and applied once.
func TestGradientAccumulation(t *testing.T) {
	const steps = 6
	wantLosses, wantVars := referenceRun(t, 32, steps)
	_ = wantLosses
	acc := newAccelerator(t, accelerate.WithGradientAccumulationSteps(2))
	ctx := toyContext()
	tr, err := NewTrainer(acc, pureGo(t), ctx, toyModel, toyLoss, toyOptimizer(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ds := &toyDataset{d: newToyData(), batch: 16}
	for i := 0; i < 2*steps; i++ {
		_, in, lb, _ := ds.Yield()
		if _, err := tr.TrainStep(nil, in, lb); err != nil {
			t.Fatalf("micro-step %d: %v", i, err)
		}
		if want := int64((i + 1) / 2); tr.GlobalStep() != want {
			t.Fatalf("after micro-step %d the global step is %d, want %d", i, tr.GlobalStep(), want)
		}
	}
	got := trainableValues(t, ctx)
	for name, want := range wantVars {
		if d := maxDiff(got[name], want); d > 1e-5 {
			t.Errorf("%s differs from one batch of 32 by %g", name, d)
		}
	}
}

// bf16 computes in bfloat16 with float32 masters; fp16 on a backend
// without half precision is refused with a message that says so.
func TestMixedPrecision(t *testing.T) {
	acc := newAccelerator(t, accelerate.WithMixedPrecision("bf16"))
	ctx := toyContext()
	tr, err := NewTrainer(acc, pureGo(t), ctx, toyModel, toyLoss, toyOptimizer(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ds := &toyDataset{d: newToyData(), batch: 64}
	var first, last float64
	for i := 0; i < 40; i++ {
		_, in, lb, _ := ds.Yield()
		m, err := tr.TrainStep(nil, in, lb)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		l := float64(tensors.ToScalar[float32](m[0]))
		if i == 0 {
			first = l
		}
		last = l
	}
	if !(last < first*0.7) {
		t.Errorf("bf16 training: loss %v → %v", first, last)
	}
	for v := range ctx.IterVariables() {
		if strings.HasPrefix(v.Scope(), "/model") && v.Trainable && v.DType() != dtypes.BFloat16 {
			t.Errorf("model variable %s is %s, want bfloat16", v.ScopeAndName(), v.DType())
		}
	}
	for v := range tr.Masters().IterVariables() {
		if v.Trainable && v.DType() != dtypes.Float32 {
			t.Errorf("master %s is %s, want float32", v.ScopeAndName(), v.DType())
		}
	}

	// fp16 is for GPUs (Accelerate refuses it on a CPU): a process with a
	// GPU whose backend is the pure-Go one is told why it cannot.
	t.Setenv(accelerate.EnvCUDAVisible, "0")
	acc = newAccelerator(t, accelerate.WithMixedPrecision("fp16"))
	_, err = NewTrainer(acc, pureGo(t), toyContext(), toyModel, toyLoss, toyOptimizer(), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "SimpleGo (go) backend cannot compute in Float16") {
		t.Fatalf("fp16 on the pure-Go backend: %v", err)
	}
}

// The fp16 loss scaler's path (scaled loss, unscaled gradients, steps
// skipped on overflow with the scale backed off), on float32 arithmetic.
func TestLossScaler(t *testing.T) {
	acc := newAccelerator(t)
	ctx := toyContext()
	tr, err := NewTrainer(acc, pureGo(t), ctx, toyModel, toyLoss, toyOptimizer(), nil, nil, WithSeparateUpdateGraph())
	if err != nil {
		t.Fatal(err)
	}
	// A scale of 2^10: the update must be the unscaled gradient's, the
	// same as without a scaler. (fp16 has a scaler from the start, and
	// never one graph a step; this float32 Trainer is given one late.)
	tr.scaler, err = amp.NewGradScaler(kwargs.GradScalerKwargs{InitScale: 1024})
	if err != nil {
		t.Fatal(err)
	}
	const steps = 5
	_, wantVars := referenceRun(t, 32, steps)
	ds := &toyDataset{d: newToyData(), batch: 32}
	for i := 0; i < steps; i++ {
		_, in, lb, _ := ds.Yield()
		if _, err := tr.TrainStep(nil, in, lb); err != nil {
			t.Fatal(err)
		}
	}
	got := trainableValues(t, ctx)
	for name, want := range wantVars {
		if d := maxDiff(got[name], want); d > 1e-6 {
			t.Errorf("%s with a scaled loss differs by %g", name, d)
		}
	}
	// An overflowing scale (the gradients become infinite): the step is skipped, the scale backed off, and
	// the variables stay as they were.
	tr.scaler, _ = amp.NewGradScaler(kwargs.GradScalerKwargs{InitScale: 3e38})
	tr.scaleVar.MustSetValue(tensors.FromScalar(float32(math.Inf(1)))) // what 3e38 overflows to in a graph
	before := trainableValues(t, ctx)
	_, in, lb, _ := ds.Yield()
	if _, err := tr.TrainStep(nil, in, lb); err != nil {
		t.Fatal(err)
	}
	if tr.SkippedSteps() != 1 || tr.scaler.GetScale() != 1.5e38 {
		t.Fatalf("skipped %d, scale %g; want 1 skipped step and the scale halved", tr.SkippedSteps(), tr.scaler.GetScale())
	}
	after := trainableValues(t, ctx)
	for name := range before {
		if maxDiff(before[name], after[name]) != 0 {
			t.Errorf("%s changed in a skipped step", name)
		}
	}
	if v := tensors.ToScalar[float32](tr.scaleVar.MustValue()); v != float32(1.5e38) {
		t.Errorf("the graph's loss scale is %g", v)
	}
}

// notWithGradients is an optimizer GoMLX accepts but goaccel cannot
// prepare: it cannot apply given gradients.
type notWithGradients struct{}

func (notWithGradients) UpdateGraph(*context.Context, *Graph, *Node) {}
func (notWithGradients) Clear(*context.Context) error                { return nil }

func TestBadInput(t *testing.T) {
	acc := newAccelerator(t)
	_, err := NewTrainer(acc, pureGo(t), toyContext(), toyModel, toyLoss, notWithGradients{}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "gomlx.notWithGradients cannot be prepared") || !strings.Contains(err.Error(), "UpdateGraphWithGradients") {
		t.Errorf("an optimizer without UpdateGraphWithGradients: %v", err)
	}
	if _, err := NewTrainer(acc, nil, toyContext(), toyModel, toyLoss, toyOptimizer(), nil, nil); err == nil || !strings.Contains(err.Error(), "nil backend") {
		t.Errorf("nil backend: %v", err)
	}
	// A model without trainable variables.
	noVars := func(ctx *context.Context, _ any, inputs []*Node) []*Node {
		return []*Node{Slice(inputs[0], AxisRange(), AxisRange(0, classes))}
	}
	tr, err := NewTrainer(acc, pureGo(t), toyContext(), noVars, toyLoss, toyOptimizer(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ds := &toyDataset{d: newToyData(), batch: 8}
	_, in, lb, _ := ds.Yield()
	if _, err := tr.TrainStep(nil, in, lb); err == nil || !strings.Contains(err.Error(), "no trainable variables") {
		t.Errorf("a model without variables: %v", err)
	}
}

// ShardDataset gives each process its rows; a batch the processes cannot
// split is named.
func TestShardDataset(t *testing.T) {
	d := newToyData()
	for rank := 0; rank < 2; rank++ {
		ds := ShardDataset(fakeProcesses{2, rank}, &toyDataset{d: d, batch: 8})
		_, in, lb, err := ds.Yield()
		if err != nil {
			t.Fatal(err)
		}
		x := tensors.MustCopyFlatData[float32](in[0])
		y := tensors.MustCopyFlatData[int32](lb[0])
		if in[0].Shape().Dimensions[0] != 4 || len(y) != 4 {
			t.Fatalf("rank %d: shapes %s %s", rank, in[0].Shape(), lb[0].Shape())
		}
		for i := 0; i < 4; i++ {
			k := rank*4 + i
			if y[i] != d.y[k] || maxDiff(x[i*features:(i+1)*features], d.x[k*features:(k+1)*features]) != 0 {
				t.Fatalf("rank %d row %d is not example %d", rank, i, k)
			}
		}
	}
	ds := ShardDataset(fakeProcesses{3, 1}, &toyDataset{d: d, batch: 8})
	if _, _, _, err := ds.Yield(); err == nil || !strings.Contains(err.Error(), "a batch of 8 examples cannot be split evenly between 3 processes") {
		t.Fatalf("8 examples for 3 processes: %v", err)
	}
	// The end of the data passes through as io.EOF itself (train.Loop
	// compares with ==).
	ds = ShardDataset(fakeProcesses{2, 0}, &toyDataset{d: d, batch: 256, epoch: true})
	for i := 0; i < 2; i++ {
		if _, _, _, err := ds.Yield(); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, _, err := ds.Yield(); !errors.Is(err, errEOF()) || err != errEOF() {
		t.Fatalf("end of data: %v", err)
	}
}

// fakeProcesses is a process of n whose batch checks see only copies of
// its own batch (the processes agree).
type fakeProcesses struct{ n, rank int }

func (f fakeProcesses) NumProcesses() int { return f.n }
func (f fakeProcesses) ProcessIndex() int { return f.rank }
func (f fakeProcesses) GatherBytes(b []byte) ([][]byte, error) {
	out := make([][]byte, f.n)
	for i := range out {
		out[i] = b
	}
	return out, nil
}

// SaveModel writes the masters as safetensors named by scope and
// variable; LoadModel puts them into another trainer's model.
func TestSaveAndLoadModel(t *testing.T) {
	acc := newAccelerator(t)
	ctx := toyContext()
	tr, err := NewTrainer(acc, pureGo(t), ctx, toyModel, toyLoss, toyOptimizer(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ds := &toyDataset{d: newToyData(), batch: 32}
	for i := 0; i < 3; i++ {
		_, in, lb, _ := ds.Yield()
		if _, err := tr.TrainStep(nil, in, lb); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	if err := acc.SaveModel(tr.Model(), dir, 0); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.ReadFile(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	want := trainableValues(t, tr.Masters())
	if len(f.Tensors) != len(want) {
		t.Fatalf("%d tensors saved, the model has %d", len(f.Tensors), len(want))
	}
	for _, st := range f.Tensors {
		got := make([]float32, st.Elements())
		if err := st.Float32s(got); err != nil {
			t.Fatal(err)
		}
		if maxDiff(got, want[st.Name]) != 0 {
			t.Errorf("saved %s differs from the master", st.Name)
		}
	}

	// Another trainer, built by one step of its own, takes the saved model.
	acc2 := newAccelerator(t)
	ctx2 := toyContext()
	ctx2.SetParam(context.ParamInitialSeed, int64(99))
	tr2, err := NewTrainer(acc2, pureGo(t), ctx2, toyModel, toyLoss, toyOptimizer(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, in, lb, _ := ds.Yield()
	if _, err := tr2.TrainStep(nil, in, lb); err != nil {
		t.Fatal(err)
	}
	if err := accelerate.LoadModel(tr2.Model(), dir); err != nil {
		t.Fatal(err)
	}
	got := trainableValues(t, ctx2)
	for name, w := range want {
		if maxDiff(got[name], w) != 0 {
			t.Errorf("after LoadModel the model's %s differs from the saved one", name)
		}
	}
}

// WithClipGradNorm: with SGD at learning rate 1 a step moves the weights by
// the clipped gradient, whose norm is the bound.
func TestClipGradNorm(t *testing.T) {
	acc := newAccelerator(t)
	ctx := toyContext()
	sgd := optimizers.StochasticGradientDescent().WithDecay(false).WithLearningRate(1).Done()
	tr, err := NewTrainer(acc, pureGo(t), ctx, toyModel, toyLoss, sgd, nil, nil, WithClipGradNorm(1e-3, 2))
	if err != nil {
		t.Fatal(err)
	}
	ds := &toyDataset{d: newToyData(), batch: 32}
	_, in, lb, _ := ds.Yield()
	// The first step builds the model: take the weights after it, then
	// measure the second step's move.
	if _, err := tr.TrainStep(nil, in, lb); err != nil {
		t.Fatal(err)
	}
	before := trainableValues(t, ctx)
	_, in, lb, _ = ds.Yield()
	if _, err := tr.TrainStep(nil, in, lb); err != nil {
		t.Fatal(err)
	}
	after := trainableValues(t, ctx)
	var sq float64
	for name, b := range before {
		for i := range b {
			d := float64(after[name][i] - b[i])
			sq += d * d
		}
	}
	if n := math.Sqrt(sq); n > 1e-3*1.001 || n < 1e-3*0.9 {
		t.Errorf("a clipped SGD step moved the weights by %g, want the bound 1e-3", n)
	}
	if _, err := NewTrainer(acc, pureGo(t), toyContext(), toyModel, toyLoss, sgd, nil, nil, WithClipGradNorm(1, 2), WithClipGradValue(1)); err == nil {
		t.Error("both clippings at once were accepted")
	}
}

// ComputeDType tells a model function the Trainer's dtype.
func TestComputeDType(t *testing.T) {
	if d := ComputeDType(context.New()); d != dtypes.Float32 {
		t.Errorf("outside a Trainer: %s", d)
	}
	for mp, want := range map[string]dtypes.DType{"no": dtypes.Float32, "bf16": dtypes.BFloat16} {
		ctx := toyContext()
		if _, err := NewTrainer(newAccelerator(t, accelerate.WithMixedPrecision(mp)), pureGo(t), ctx, toyModel, toyLoss, toyOptimizer(), nil, nil); err != nil {
			t.Fatal(err)
		}
		if got := ComputeDType(ctx.In("model").In("layer")); got != want {
			t.Errorf("mixed precision %q: %s, want %s", mp, got, want)
		}
	}
}

// A model whose bfloat16 variables GoMLX initialized to zeros (its random
// initializers do that for 16-bit dtypes) is refused with the reason.
func TestZeroBFloat16VariablesAreRefused(t *testing.T) {
	acc := newAccelerator(t, accelerate.WithMixedPrecision("bf16"))
	model := func(ctx *context.Context, _ any, inputs []*Node) []*Node {
		ctx = ctx.In("model").WithInitializer(initializers.RandomNormalFn(ctx, 0.02))
		w := ctx.VariableWithShape("w", shapes.Make(ComputeDType(ctx), features, classes)).ValueGraph(inputs[0].Graph())
		return []*Node{Dot(inputs[0], w)}
	}
	tr, err := NewTrainer(acc, pureGo(t), toyContext(), model, toyLoss, toyOptimizer(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, in, lb, _ := (&toyDataset{d: newToyData(), batch: 8}).Yield()
	_, err = tr.TrainStep(nil, in, lb)
	if err == nil || !strings.Contains(err.Error(), "every 16-bit trainable variable of the model is zero after initialization (/model/w") {
		t.Fatalf("zero bfloat16 variables: %v", err)
	}
}

// The masters reach bfloat16 variables rounded to nearest even, as torch
// and XLA convert, not truncated as GoMLX's bfloat16.FromFloat32 does: a
// truncated weight is biased toward zero.
func TestFromHostRoundsToNearest(t *testing.T) {
	in := []float32{1 + 3.0/512, -(1 + 3.0/512), 1 + 1.0/128 + 1.0/256} // above half an ulp; negative; a tie, to even
	want := []float32{1 + 1.0/128, -(1 + 1.0/128), 1 + 1.0/64}
	got := tensors.MustCopyFlatData[bfloat16.BFloat16](fromHost(in, dtypes.BFloat16, []int{len(in)}))
	for i := range in {
		if got[i].Float32() != want[i] {
			t.Errorf("%v became %v, want %v", in[i], got[i].Float32(), want[i])
		}
	}
}
