package gomlx

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/context/initializers"
	"github.com/gomlx/gomlx/pkg/ml/layers"
	"github.com/gomlx/gomlx/pkg/ml/layers/activations"
	"github.com/gomlx/gomlx/pkg/ml/train/losses"
)

// A tiny causal character model with what a GPT has that the toy model
// lacks: integer inputs [B,T], labels [B,T,1], an embedding whose table is
// also the output head (tied weights), learned positions, dropout, and a
// causal mixing of earlier positions (a lower-triangular average).
const (
	tokVocab = 11
	tokBlock = 6
	tokDim   = 16
)

var tokDropout = 0.1

func tokenModel(ctx *context.Context, _ any, inputs []*Node) []*Node {
	ctx = ctx.In("lm").WithInitializer(initializers.RandomNormalFn(ctx, 0.3))
	ids := inputs[0]
	g := ids.Graph()
	b, tt := ids.Shape().Dimensions[0], ids.Shape().Dimensions[1]
	x := layers.Embedding(ctx.In("wte"), ids, dtypes.Float32, tokVocab, tokDim) // [B,T,C]
	wpe := ctx.In("wpe").VariableWithShape("table", shapes.Make(dtypes.Float32, tokBlock, tokDim)).ValueGraph(g)
	x = Add(x, BroadcastToDims(InsertAxes(wpe, 0), b, tt, tokDim))
	mix := ConvertDType(LowerTriangular(g, tt), dtypes.Float32)
	mix = Div(mix, ReduceAndKeep(mix, ReduceSum, -1)) // each position averages itself and the earlier ones
	x = Add(x, Einsum("qk,bkc->bqc", mix, x))
	x = activations.Gelu(layers.Dense(ctx.In("mlp"), x, true, tokDim))
	x = layers.DropoutNormalize(ctx, x, Scalar(g, dtypes.Float32, tokDropout), true)
	table := ctx.In("wte").GetVariable("embeddings").ValueGraph(g)
	return []*Node{Einsum("btc,vc->btv", x, table)}
}

// tokenBatches yields next-token batches of a repeating sequence, so the
// model can learn it.
type tokenBatches struct{ batch, k int }

func (d *tokenBatches) Name() string { return "tokens" }
func (d *tokenBatches) Reset()       { d.k = 0 }
func (d *tokenBatches) Yield() (any, []*tensors.Tensor, []*tensors.Tensor, error) {
	x := make([]int32, d.batch*tokBlock)
	y := make([]int32, d.batch*tokBlock)
	for i := range d.batch {
		start := (d.k*7 + i*3) % tokVocab
		for j := range tokBlock {
			x[i*tokBlock+j] = int32((start + j) % tokVocab)
			y[i*tokBlock+j] = int32((start + j + 1) % tokVocab)
		}
	}
	d.k++
	return nil, []*tensors.Tensor{tensors.FromFlatDataAndDimensions(x, d.batch, tokBlock)},
		[]*tensors.Tensor{tensors.FromFlatDataAndDimensions(y, d.batch, tokBlock, 1)}, nil
}

func newTokenTrainer(t *testing.T, lr float64) (*Trainer, *context.Context) {
	t.Helper()
	ctx := context.New()
	ctx.SetParam(context.ParamInitialSeed, int64(3))
	tr, err := NewTrainer(newAccelerator(t), pureGo(t), ctx, tokenModel, losses.SparseCategoricalCrossEntropyLogits,
		AdamW().LearningRate(lr).WeightDecay(0.01, DecayMatrices), nil, nil, WithClipGradNorm(1, 2))
	if err != nil {
		t.Fatal(err)
	}
	return tr, ctx
}

// Integer inputs, [B,T,1] labels, tied weights and dropout train under a
// Trainer; dropout acts in training steps only.
func TestTokenModel(t *testing.T) {
	tr, _ := newTokenTrainer(t, 0.05)
	ds := &tokenBatches{batch: 4}
	var first, last float64
	for i := range 300 {
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
	if !(last < 0.5*first) {
		t.Errorf("the token model did not learn: loss %v → %v", first, last)
	}
	// One master for the tied table (embedding and head are one variable).
	names := strings.Join(tr.Model().(interface{ ParameterNames() []string }).ParameterNames(), " ")
	if strings.Count(names, "embeddings") != 1 {
		t.Errorf("parameters %s: want the tied table once", names)
	}
	if tr.GradNorm() <= 0 {
		t.Errorf("GradNorm %v after clipped steps", tr.GradNorm())
	}

	// Dropout: evaluation is deterministic, training steps are not.
	_, in, lb, _ := ds.Yield()
	in, lb = in[:1:1], lb[:1:1]
	evalLoss := func() float64 {
		m, err := tr.Eval(&oneBatch{in, lb})
		if err != nil {
			t.Fatal(err)
		}
		return float64(tensors.ToScalar[float32](m[0]))
	}
	if a, b := evalLoss(), evalLoss(); a != b {
		t.Errorf("two evaluations of one batch: %v and %v (dropout in evaluation?)", a, b)
	}
	p1, _ := tr.Predict(in...)
	p2, _ := tr.Predict(in...)
	if d := maxDiff(tensors.MustCopyFlatData[float32](p1[0]), tensors.MustCopyFlatData[float32](p2[0])); d != 0 {
		t.Errorf("two predictions differ by %g", d)
	}
	tr0, _ := newTokenTrainer(t, 0) // learning rate 0: only dropout changes the loss
	_, in, lb, _ = (&tokenBatches{batch: 4}).Yield()
	var trainLosses []float64
	for range 3 {
		x, _ := in[0].LocalClone()
		y, _ := lb[0].LocalClone()
		m, err := tr0.TrainStep(nil, []*tensors.Tensor{x}, []*tensors.Tensor{y})
		if err != nil {
			t.Fatal(err)
		}
		trainLosses = append(trainLosses, float64(tensors.ToScalar[float32](m[0])))
	}
	if trainLosses[1] == trainLosses[2] {
		t.Errorf("training losses %v on one batch with no learning: dropout does not act in training", trainLosses)
	}
}

// oneBatch yields one batch, which stays the caller's.
type oneBatch struct{ in, lb []*tensors.Tensor }

func (o *oneBatch) IsOwnershipTransferred() bool { return false }

func (o *oneBatch) Name() string { return "one" }
func (o *oneBatch) Reset()       {}
func (o *oneBatch) Yield() (any, []*tensors.Tensor, []*tensors.Tensor, error) {
	if o.in == nil {
		return nil, nil, nil, errEOF()
	}
	in, lb := o.in, o.lb
	o.in = nil
	return nil, in, lb, nil
}

// Generate continues the sequence the model learned; the same seed gives
// the same tokens, and temperature 0 is the model's most likely token.
func TestGenerate(t *testing.T) {
	tr, _ := newTokenTrainer(t, 0.05)
	ds := &tokenBatches{batch: 4}
	for range 300 {
		_, in, lb, _ := ds.Yield()
		if _, err := tr.TrainStep(nil, in, lb); err != nil {
			t.Fatal(err)
		}
	}
	greedy, err := tr.Generate([]int32{2, 3}, 12, tokBlock, SampleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(greedy); i++ {
		if greedy[i] != (greedy[i-1]+1)%tokVocab {
			t.Fatalf("greedy continuation %v does not follow the sequence", greedy)
		}
	}
	// A high temperature flattens the top 4 so that seeds matter.
	a, err := tr.Generate([]int32{5}, 20, tokBlock, SampleOptions{Temperature: 100, TopK: 4, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := tr.Generate([]int32{5}, 20, tokBlock, SampleOptions{Temperature: 100, TopK: 4, Seed: 9})
	c, _ := tr.Generate([]int32{5}, 20, tokBlock, SampleOptions{Temperature: 100, TopK: 4, Seed: 10})
	if len(a) != 21 || !equalInts(a, b) {
		t.Fatalf("the same seed gave %v and %v", a, b)
	}
	if equalInts(a, c) {
		t.Errorf("seeds 9 and 10 gave the same 20 tokens at temperature 100: %v", a)
	}
	for _, bad := range []struct {
		prompt []int32
		n      int
		opts   SampleOptions
		want   string
	}{
		{nil, 3, SampleOptions{}, "empty prompt"},
		{[]int32{1}, 3, SampleOptions{Temperature: -1}, "temperature -1"},
		{[]int32{1}, 3, SampleOptions{TopK: -2}, "top-k -2"},
	} {
		if _, err := tr.Generate(bad.prompt, bad.n, tokBlock, bad.opts); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("want an error naming %q, got %v", bad.want, err)
		}
	}
	if _, err := tr.Generate([]int32{1}, 2, tokBlock+1, SampleOptions{}); err == nil || !strings.Contains(err.Error(), "want logits [1, 7, vocabulary]") && !strings.Contains(err.Error(), "gomlx") {
		t.Errorf("a context the model was not built for: %v", err)
	}
}

func equalInts(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Sample draws from the softmax of logits/temperature over the top k.
func TestSample(t *testing.T) {
	logits := []float32{2, 1, 0, -1, 3}
	rng := rand.New(rand.NewPCG(1, 2))
	const draws = 40000
	counts := make([]int, len(logits))
	for range draws {
		k, err := Sample(logits, 0.8, 3, rng)
		if err != nil {
			t.Fatal(err)
		}
		counts[k]++
	}
	// Top 3: indexes 4, 0, 1.
	var z float64
	for _, i := range []int{4, 0, 1} {
		z += math.Exp(float64(logits[i]) / 0.8)
	}
	for i, c := range counts {
		want := 0.0
		if i == 4 || i == 0 || i == 1 {
			want = math.Exp(float64(logits[i])/0.8) / z
		}
		if got := float64(c) / draws; math.Abs(got-want) > 0.01 {
			t.Errorf("token %d drawn %.4f of the time, want %.4f", i, got, want)
		}
	}
	if k, _ := Sample(logits, 0, 0, rng); k != 4 {
		t.Errorf("temperature 0 drew %d, want the largest logit's 4", k)
	}
	if _, err := Sample([]float32{1, float32(math.NaN())}, 1, 0, rng); err == nil || !strings.Contains(err.Error(), "NaN") {
		t.Errorf("NaN logits: %v", err)
	}
	inf := float32(math.Inf(-1))
	if _, err := Sample([]float32{inf, inf}, 1, 0, rng); err == nil {
		t.Error("all -Inf logits were sampled")
	}
}
