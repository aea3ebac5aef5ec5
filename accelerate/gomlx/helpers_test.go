package gomlx

import (
	"io"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/layers"
	"github.com/gomlx/gomlx/pkg/ml/layers/activations"
	"github.com/gomlx/gomlx/pkg/ml/train"
	"github.com/gomlx/gomlx/pkg/ml/train/losses"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"
)

// A small classification task: 8 features, 4 classes, a fixed rule.
const (
	features   = 8
	classes    = 4
	numClasses = classes
	examples   = 512
)

type toyData struct {
	x []float32 // examples × features
	y []int32
}

func newToyData() *toyData {
	rng := rand.New(rand.NewPCG(1, 2))
	d := &toyData{x: make([]float32, examples*features), y: make([]int32, examples)}
	w := make([]float32, features*classes)
	for i := range w {
		w[i] = float32(rng.NormFloat64())
	}
	for i := 0; i < examples; i++ {
		best, bestScore := 0, float32(math.Inf(-1))
		for j := 0; j < features; j++ {
			d.x[i*features+j] = float32(rng.NormFloat64())
		}
		for c := 0; c < classes; c++ {
			var s float32
			for j := 0; j < features; j++ {
				s += d.x[i*features+j] * w[j*classes+c]
			}
			if s > bestScore {
				best, bestScore = c, s
			}
		}
		d.y[i] = int32(best)
	}
	return d
}

// toyDataset yields batches in order, wrapping around (endless) unless
// epoch is set, when it ends after one pass.
type toyDataset struct {
	d     *toyData
	batch int
	pos   int
	epoch bool
}

func (ds *toyDataset) Name() string { return "toy" }
func (ds *toyDataset) Reset()       { ds.pos = 0 }
func (ds *toyDataset) Yield() (any, []*tensors.Tensor, []*tensors.Tensor, error) {
	if ds.epoch && ds.pos+ds.batch > examples {
		return nil, nil, nil, io.EOF
	}
	x := make([]float32, ds.batch*features)
	y := make([]int32, ds.batch)
	for i := 0; i < ds.batch; i++ {
		k := (ds.pos + i) % examples
		copy(x[i*features:(i+1)*features], ds.d.x[k*features:(k+1)*features])
		y[i] = ds.d.y[k]
	}
	ds.pos += ds.batch
	if !ds.epoch {
		ds.pos %= examples
	}
	return nil, []*tensors.Tensor{tensors.FromFlatDataAndDimensions(x, ds.batch, features)},
		[]*tensors.Tensor{tensors.FromFlatDataAndDimensions(y, ds.batch, 1)}, nil
}

func toyModel(ctx *context.Context, _ any, inputs []*Node) []*Node {
	ctx = ctx.In("model")
	h := activations.Relu(layers.Dense(ctx.In("hidden"), inputs[0], true, 16))
	return []*Node{layers.Dense(ctx.In("out"), h, true, classes)}
}

var toyLoss = losses.SparseCategoricalCrossEntropyLogits

func toyContext() *context.Context {
	ctx := context.New()
	ctx.SetParam(context.ParamInitialSeed, int64(7))
	return ctx
}

func toyOptimizer() optimizers.Interface { return optimizers.Adam().LearningRate(0.01).Done() }

// pureGo is GoMLX's pure-Go backend: deterministic and needs no plugin.
func pureGo(t testing.TB) backends.Backend {
	t.Helper()
	b, err := backends.NewWithConfig("go")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// trainableValues reads every trainable variable of ctx as float32, by
// scope and name.
func trainableValues(t testing.TB, ctx *context.Context) map[string][]float32 {
	t.Helper()
	out := map[string][]float32{}
	for v := range ctx.IterVariables() {
		if !v.Trainable || v.DType() == dtypes.InvalidDType {
			continue
		}
		val, err := v.Value()
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]float32, val.Size())
		if err := toHost(val, buf); err != nil {
			t.Fatal(err)
		}
		out[v.ScopeAndName()] = buf
	}
	return out
}

// maxDiff is the largest difference of two equally long vectors (+Inf
// when their lengths differ: a missing variable is not equal).
func maxDiff(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return math.Inf(1)
	}
	d := 0.0
	for i := range a {
		d = math.Max(d, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d
}

// referenceRun trains the toy model with GoMLX's own trainer (one graph a
// step) and returns its per-step losses and final variables.
func referenceRun(t testing.TB, batch, steps int) ([]float64, map[string][]float32) {
	t.Helper()
	ctx := toyContext()
	tr := train.NewTrainer(pureGo(t), ctx, toyModel, toyLoss, toyOptimizer(), nil, nil)
	ds := &toyDataset{d: newToyData(), batch: batch}
	var lossesOut []float64
	for i := 0; i < steps; i++ {
		_, in, lb, _ := ds.Yield()
		m, err := tr.TrainStep(nil, in, lb)
		if err != nil {
			t.Fatal(err)
		}
		lossesOut = append(lossesOut, float64(tensors.ToScalar[float32](m[0])))
	}
	return lossesOut, trainableValues(t, ctx)
}

func errEOF() error { return io.EOF }
