package gomlx

import (
	"math"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"
)

// torchAdamW is torch.optim.AdamW's step (PyTorch's documented algorithm,
// single tensor, float64) on p given gradients g at step t (from 1).
func torchAdamW(p, g, m, v []float64, t int, lr, b1, b2, eps, wd float64) {
	bc1 := 1 - math.Pow(b1, float64(t))
	bc2Sqrt := math.Sqrt(1 - math.Pow(b2, float64(t)))
	for i := range p {
		p[i] *= 1 - lr*wd
		m[i] = b1*m[i] + (1-b1)*g[i]
		v[i] = b2*v[i] + (1-b2)*g[i]*g[i]
		p[i] -= lr / bc1 * m[i] / (math.Sqrt(v[i])/bc2Sqrt + eps)
	}
}

// AdamW's updates are torch's, with weight decay only where Decay says:
// a matrix is decayed, a vector (a bias) is not.
func TestAdamWIsTorchsAdamW(t *testing.T) {
	backend := pureGo(t)
	ctx := context.New()
	w0 := []float64{0.5, -1.25, 2, 0.75, -0.3, 1.1}
	b0 := []float64{0.2, -0.4}
	wVar := ctx.In("layer").VariableWithValue("weights", tensors.FromFlatDataAndDimensions(toF32(w0), 3, 2))
	bVar := ctx.In("layer").VariableWithValue("biases", tensors.FromFlatDataAndDimensions(toF32(b0), 2))
	const lr, b1, b2, eps, wd = 0.05, 0.9, 0.99, 1e-8, 0.1
	opt := AdamW().LearningRate(lr).Betas(b1, b2).Epsilon(eps).WeightDecay(wd, DecayMatrices).Done()
	if opt.Err() != nil {
		t.Fatal(opt.Err())
	}
	exec, err := context.NewExec(backend, ctx, func(ctx *context.Context, gw, gb *Node) *Node {
		g := gw.Graph()
		_ = wVar.ValueGraph(g)
		_ = bVar.ValueGraph(g)
		opt.UpdateGraphWithGradients(ctx, []*Node{gw, gb}, dtypes.Float32) // IterVariables order: as created
		return optimizers.GetGlobalStepVar(ctx).ValueGraph(g)
	})
	if err != nil {
		t.Fatal(err)
	}
	w, b := append([]float64(nil), w0...), append([]float64(nil), b0...)
	mw, vw := make([]float64, len(w)), make([]float64, len(w))
	mb, vb := make([]float64, len(b)), make([]float64, len(b))
	grads := [][2][]float64{
		{{0.1, -0.2, 0.3, 0.05, -0.5, 0.25}, {1, -2}},
		{{-0.3, 0.1, 0.2, -0.05, 0.4, 0.0}, {0.5, 0.25}},
		{{0.02, 0.02, -0.6, 0.3, 0.1, -0.1}, {-1, 3}},
	}
	for step, gr := range grads {
		out, err := exec.Exec(tensors.FromFlatDataAndDimensions(toF32(gr[0]), 3, 2), tensors.FromFlatDataAndDimensions(toF32(gr[1]), 2))
		if err != nil {
			t.Fatal(err)
		}
		if gs := tensors.ToScalar[int64](out[0]); gs != int64(step+1) {
			t.Fatalf("global step %d after %d updates", gs, step+1)
		}
		torchAdamW(w, gr[0], mw, vw, step+1, lr, b1, b2, eps, wd)
		torchAdamW(b, gr[1], mb, vb, step+1, lr, b1, b2, eps, 0) // not decayed
		for name, want := range map[string][]float64{"weights": w, "biases": b} {
			v := ctx.In("layer").GetVariable(name)
			got := tensors.MustCopyFlatData[float32](v.MustValue())
			for i := range want {
				if d := math.Abs(float64(got[i]) - want[i]); d > 2e-6*(1+math.Abs(want[i])) {
					t.Fatalf("step %d: %s[%d] = %v, torch's AdamW %v", step+1, name, i, got[i], want[i])
				}
			}
		}
	}
	// The state is where checkpoints find it.
	if ctx.GetVariableByScopeAndName(AdamWScope+"/layer", "weights_exp_avg_sq") == nil {
		t.Error("no second moment of /layer/weights under " + AdamWScope)
	}
}

func toF32(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

// Bad settings are errors that name them, from NewTrainer.
func TestAdamWBadSettings(t *testing.T) {
	acc := newAccelerator(t)
	for _, c := range []struct {
		opt  *AdamWOptimizer
		want string
	}{
		{AdamW().Betas(0.9, 1), "betas (0.9, 1)"},
		{AdamW().LearningRate(math.NaN()), "learning rate NaN"},
		{AdamW().Epsilon(-1), "epsilon -1"},
		{AdamW().WeightDecay(-0.1, nil), "weight decay -0.1"},
	} {
		_, err := NewTrainer(acc, pureGo(t), toyContext(), toyModel, toyLoss, c.opt, nil, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error naming %q, got %v", c.want, err)
		}
	}
}

// Under a Trainer, AdamW trains the toy model, and its decay reaches the
// matrices only: with a large decay and no gradient signal (learning
// rate tiny against the decay), biases keep their values.
func TestAdamWUnderTrainer(t *testing.T) {
	acc := newAccelerator(t)
	ctx := toyContext()
	tr, err := NewTrainer(acc, pureGo(t), ctx, toyModel, toyLoss,
		AdamW().LearningRate(0.01).WeightDecay(0.1, DecayMatrices).Done(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ds := &toyDataset{d: newToyData(), batch: 64}
	var first, last float64
	for i := range 60 {
		_, in, lb, _ := ds.Yield()
		m, err := tr.TrainStep(nil, in, lb)
		if err != nil {
			t.Fatal(err)
		}
		l := float64(tensors.ToScalar[float32](m[0]))
		if i == 0 {
			first = l
		}
		last = l
	}
	if !(last < 0.6*first) {
		t.Errorf("AdamW did not train: loss %v → %v", first, last)
	}
	var moments int
	for v := range tr.Masters().IterVariables() {
		if strings.HasPrefix(v.Scope(), AdamWScope) {
			moments++
		}
	}
	if moments != 2*4+1 { // two moments of 4 variables, and the step count
		t.Errorf("%d AdamW state variables, want 9", moments)
	}
}
