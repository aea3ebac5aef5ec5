package nn

import (
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/goaccel/goaccel/accelerate/amp"
	"github.com/goaccel/goaccel/accelerate/ddp"
	"github.com/goaccel/goaccel/accelerate/kwargs"
)

// spirals is two interleaved spirals, n points per class, as the notebook
// generates them.
func spirals(n int, noise float64, seed uint64) (*mat.Dense, []int) {
	rng := rand.New(rand.NewPCG(seed, 1))
	x := mat.NewDense(2*n, 2, nil)
	y := make([]int, 2*n)
	for c := 0; c < 2; c++ {
		for i := 0; i < n; i++ {
			r := 0.1 + 0.9*float64(i)/float64(n)
			t := 1.25*r*2*math.Pi + float64(c)*math.Pi
			x.Set(c*n+i, 0, r*math.Cos(t)+noise*rng.NormFloat64())
			x.Set(c*n+i, 1, r*math.Sin(t)+noise*rng.NormFloat64())
			y[c*n+i] = c
		}
	}
	return x, y
}

func lossOf(m *MLP, x *mat.Dense, y []int) float64 {
	l, _ := CrossEntropy(m.Forward(x), y)
	return l
}

func TestGradientsMatchFiniteDifferences(t *testing.T) {
	for _, act := range []Activation{Tanh, ReLU} {
		m, err := NewMLP([]int{3, 5, 4, 3}, act, 7)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		x := mat.NewDense(6, 3, nil)
		for i := 0; i < 6; i++ {
			for j := 0; j < 3; j++ {
				x.Set(i, j, rng.NormFloat64())
			}
		}
		y := []int{0, 1, 2, 2, 1, 0}
		m.ZeroGrad()
		_, g := CrossEntropy(m.Forward(x), y)
		dx := m.Backward(g)
		const h = 1e-6
		for pi, p := range m.Parameters() {
			for j := range p {
				old := p[j]
				p[j] = old + h
				up := lossOf(m, x, y)
				p[j] = old - h
				down := lossOf(m, x, y)
				p[j] = old
				num := (up - down) / (2 * h)
				if got := m.Gradients()[pi][j]; math.Abs(got-num) > 1e-6*math.Max(1, math.Abs(num)) {
					t.Fatalf("%s: param %d[%d]: backward %g, finite difference %g", act, pi, j, got, num)
				}
			}
		}
		// the input gradient too
		for i := 0; i < 6; i++ {
			for j := 0; j < 3; j++ {
				old := x.At(i, j)
				x.Set(i, j, old+h)
				up := lossOf(m, x, y)
				x.Set(i, j, old-h)
				down := lossOf(m, x, y)
				x.Set(i, j, old)
				if num := (up - down) / (2 * h); math.Abs(dx.At(i, j)-num) > 1e-6 {
					t.Fatalf("%s: dx[%d,%d] = %g, finite difference %g", act, i, j, dx.At(i, j), num)
				}
			}
		}
	}
}

func TestCrossEntropyValues(t *testing.T) {
	logits := mat.NewDense(2, 3, []float64{1, 2, 3, 1000, 0, -1000})
	loss, g := CrossEntropy(logits, []int{2, 0})
	want := (math.Log(math.Exp(-2)+math.Exp(-1)+1) + 0) / 2
	if math.Abs(loss-want) > 1e-12 {
		t.Fatalf("loss %v, want %v", loss, want)
	}
	// each gradient row sums to zero and the label's entry is negative
	for i := 0; i < 2; i++ {
		s := 0.0
		for j := 0; j < 3; j++ {
			s += g.At(i, j)
		}
		if math.Abs(s) > 1e-12 {
			t.Fatalf("row %d of the gradient sums to %v", i, s)
		}
	}
	if g.At(0, 2) >= 0 || math.IsNaN(g.At(1, 0)) {
		t.Fatalf("gradient %v", mat.Formatted(g))
	}
	if a := Accuracy(logits, []int{2, 1}); a != 0.5 {
		t.Fatalf("accuracy %v", a)
	}
}

func TestNewMLPErrorsAndInit(t *testing.T) {
	for _, bad := range [][]int{{2}, {2, 0, 2}} {
		if _, err := NewMLP(bad, Tanh, 1); err == nil {
			t.Fatalf("NewMLP(%v) accepted", bad)
		}
	}
	if _, err := NewMLP([]int{2, 2}, "gelu", 1); err == nil || !strings.Contains(err.Error(), "gelu") {
		t.Fatalf("unknown activation: %v", err)
	}
	a, _ := NewMLP([]int{4, 8, 2}, Tanh, 3)
	b, _ := NewMLP([]int{4, 8, 2}, Tanh, 3)
	c, _ := NewMLP([]int{4, 8, 2}, Tanh, 4)
	if a.NumParameters() != 4*8+8+8*2+2 {
		t.Fatalf("NumParameters %d", a.NumParameters())
	}
	for i, p := range a.Parameters() {
		bound := 1 / math.Sqrt(float64(a.Shapes()[i][len(a.Shapes()[i])-1]))
		if i%2 == 1 { // biases: fan_in of the layer
			bound = 1 / math.Sqrt(float64(a.Sizes()[i/2]))
		}
		for j, v := range p {
			if v != b.Parameters()[i][j] {
				t.Fatal("same seed, different parameters")
			}
			if math.Abs(v) > bound {
				t.Fatalf("param %d[%d] = %v beyond ±%v", i, j, v, bound)
			}
		}
	}
	if c.Parameters()[0][0] == a.Parameters()[0][0] {
		t.Fatal("different seeds, same parameters")
	}
	if err := c.LoadStateDict(a.StateDict()); err != nil {
		t.Fatal(err)
	}
	if c.Parameters()[2][5] != a.Parameters()[2][5] {
		t.Fatal("LoadStateDict did not copy")
	}
	if err := c.LoadStateDict(a.StateDict()[:1]); err == nil {
		t.Fatal("short state dict accepted")
	}
	if !ddp.IsModel(a) {
		t.Fatal("*MLP is not a ddp.Model")
	}
}

func TestOptimizersMatchTorchFormulas(t *testing.T) {
	m, _ := NewMLP([]int{1, 1}, Tanh, 1)
	m.Parameters()[0][0], m.Parameters()[1][0] = 1, 0
	m.Gradients()[0][0], m.Gradients()[1][0] = 0.5, -2
	sgd := NewSGD(m, 0.1, 0.9)
	sgd.Step()
	sgd.Step() // buf = 0.9·0.5 + 0.5 = 0.95 → p = 1 − 0.05 − 0.095
	if got := m.Parameters()[0][0]; math.Abs(got-0.855) > 1e-15 {
		t.Fatalf("SGD: %v", got)
	}
	sgd.ZeroGrad()
	if m.Gradients()[1][0] != 0 {
		t.Fatal("ZeroGrad left a gradient")
	}
	m.Parameters()[0][0] = 1
	m.Gradients()[0][0] = 0.5
	adam := NewAdam(m, 0.01)
	adam.Step() // first step moves by lr·sign(g) (up to ε)
	if got := m.Parameters()[0][0]; math.Abs(got-(1-0.01)) > 1e-9 {
		t.Fatalf("Adam: %v", got)
	}
	if adam.Steps() != 1 {
		t.Fatal(adam.Steps())
	}
}

func TestAutocastRoundsToBF16(t *testing.T) {
	m, _ := NewMLP([]int{2, 3, 2}, Tanh, 5)
	x := mat.NewDense(1, 2, []float64{0.1234567, -0.7654321})
	full := mat.DenseCopyOf(m.Forward(x))
	if err := m.SetPrecision("bf16"); err != nil {
		t.Fatal(err)
	}
	low := m.Forward(x)
	for j := 0; j < 2; j++ {
		v := low.At(0, j)
		if float64(amp.RoundBF16(float32(v))) != v {
			t.Fatalf("output %v is not a bfloat16 value", v)
		}
		if v == full.At(0, j) {
			t.Fatalf("bf16 output equals float64 output %v", v)
		}
		if math.Abs(v-full.At(0, j)) > 0.05 {
			t.Fatalf("bf16 output %v too far from %v", v, full.At(0, j))
		}
	}
	// master weights stay float64
	if p := m.Parameters()[0][0]; float64(amp.RoundBF16(float32(p))) == p {
		t.Fatalf("weight %v was rounded in place", p)
	}
	if err := m.SetPrecision("fp4"); err == nil {
		t.Fatal("fp4 accepted")
	}
}

func TestBatch(t *testing.T) {
	x := mat.NewDense(3, 2, []float64{0, 1, 2, 3, 4, 5})
	xb, yb := Batch(x, []int{7, 8, 9}, []int{2, 0})
	if xb.At(0, 1) != 5 || xb.At(1, 0) != 0 || yb[0] != 9 || yb[1] != 7 {
		t.Fatalf("%v %v", mat.Formatted(xb), yb)
	}
}

// TestSpiralsTrain: the notebook's recipe learns the two spirals.
func TestSpiralsTrain(t *testing.T) {
	x, y := spirals(256, 0.03, 1)
	m, _ := NewMLP([]int{2, 32, 32, 2}, Tanh, 1)
	opt := NewAdam(m, 0.03)
	rng := rand.New(rand.NewPCG(9, 9))
	var loss float64
	for step := 0; step < 300; step++ {
		idx := rng.Perm(512)[:64]
		xb, yb := Batch(x, y, idx)
		opt.ZeroGrad()
		l, g := CrossEntropy(m.Forward(xb), yb)
		m.Backward(g)
		opt.Step()
		loss = l
	}
	full := lossOf(m, x, y)
	acc := Accuracy(m.Forward(x), y)
	t.Logf("last batch loss %.4f, full loss %.4f, accuracy %.3f", loss, full, acc)
	if full > 0.05 || acc < 0.98 {
		t.Fatalf("did not learn: loss %v accuracy %v", full, acc)
	}
}

// chanReducer is an in-process ddp.Reducer for n goroutine ranks.
type chanReducer struct {
	rank int
	w    *group
}

type group struct {
	n     int
	mu    sync.Mutex
	cond  *sync.Cond
	round int
	count int
	acc   []float64
	out   []float64
}

func newGroup(n int) *group { g := &group{n: n}; g.cond = sync.NewCond(&g.mu); return g }

// sum adds buf over the ranks in rank order... every rank contributes once
// per round; the result is the same on every rank.
func (g *group) sum(rank int, buf []float64, root int, bcast bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.round
	if g.count == 0 {
		g.acc = make([]float64, len(buf))
	}
	if bcast {
		if rank == root {
			copy(g.acc, buf)
		}
	} else {
		for i, v := range buf {
			g.acc[i] += v
		}
	}
	g.count++
	if g.count == g.n {
		g.out, g.count = g.acc, 0
		g.round++
		g.cond.Broadcast()
	}
	for g.round == r {
		g.cond.Wait()
	}
	copy(buf, g.out)
}

func (c chanReducer) Rank() int      { return c.rank }
func (c chanReducer) WorldSize() int { return c.w.n }
func (c chanReducer) AllReduceFloat64(buf []float64, op string) error {
	c.w.sum(c.rank, buf, 0, false)
	return nil
}
func (c chanReducer) AllReduceFloat32([]float32, string) error { panic("unused") }
func (c chanReducer) BroadcastFloat64(buf []float64, root int) error {
	c.w.sum(c.rank, buf, root, true)
	return nil
}
func (c chanReducer) BroadcastFloat32([]float32, int) error   { panic("unused") }
func (c chanReducer) AllGatherBytes([]byte) ([][]byte, error) { panic("unused") }

// TestDataParallelMatchesFullBatch: two ranks, each with half of every
// global batch, wrapped by ddp with comm hook "no", follow the single-process
// run with the whole batch step by step.
func TestDataParallelMatchesFullBatch(t *testing.T) {
	x, y := spirals(128, 0.02, 3)
	const steps, batch = 40, 64
	order := func() [][]int {
		rng := rand.New(rand.NewPCG(5, 5))
		var out [][]int
		for s := 0; s < steps; s++ {
			out = append(out, rng.Perm(256)[:batch])
		}
		return out
	}()
	run := func(rank, n int, r ddp.Reducer) []float64 {
		m, _ := NewMLP([]int{2, 16, 2}, Tanh, uint64(10+rank)) // rank 0's init wins (broadcast)
		d, err := ddp.Wrap(m, r, kwargs.DistributedDataParallelKwargs{})
		if err != nil {
			t.Error(err)
			return nil
		}
		opt := NewAdam(m, 0.01)
		var losses []float64
		for s := 0; s < steps; s++ {
			lo, hi := rank*batch/n, (rank+1)*batch/n
			xb, yb := Batch(x, y, order[s][lo:hi])
			opt.ZeroGrad()
			l, g := CrossEntropy(m.Forward(xb), yb)
			m.Backward(g)
			if err := d.SyncGradients(); err != nil {
				t.Error(err)
				return nil
			}
			opt.Step()
			buf := []float64{l / float64(n)}
			if err := r.AllReduceFloat64(buf, "sum"); err != nil {
				t.Error(err)
			}
			losses = append(losses, buf[0])
		}
		return losses
	}
	g1 := newGroup(1)
	ref := run(0, 1, chanReducer{0, g1})
	g2 := newGroup(2)
	var two [2][]float64
	var wg sync.WaitGroup
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() { defer wg.Done(); two[r] = run(r, 2, chanReducer{r, g2}) }()
	}
	wg.Wait()
	worst := 0.0
	for s := range ref {
		for r := 0; r < 2; r++ {
			worst = math.Max(worst, math.Abs(two[r][s]-ref[s])/math.Abs(ref[s]))
		}
	}
	t.Logf("max relative difference over %d steps: %.3g (loss %.4f → %.4f)", steps, worst, ref[0], ref[steps-1])
	if worst > 1e-9 {
		t.Fatalf("data-parallel run drifted from the full-batch run: %g", worst)
	}
	if ref[steps-1] >= ref[0] {
		t.Fatal("the loss did not fall")
	}
}
