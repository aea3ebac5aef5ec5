package vjp

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/gomlx/gomlx/backends"
	_ "github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/backends/xla"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/goaccel/goaccel/pjrt"
)

// dotCase is one DotGeneral: operand shapes and axes.
type dotCase struct {
	name                  string
	lhs, rhs              []int
	lhsContract, lhsBatch []int
	rhsContract, rhsBatch []int
}

// cases cover a Dense layer (3-D activations against a matrix), the
// attention products of a transformer (Einsum's batch axes in the middle),
// several contracted axes out of order, free axes on both sides, and an
// outer product.
var cases = []dotCase{
	{name: "dense", lhs: []int{3, 5, 8}, rhs: []int{8, 6}, lhsContract: []int{2}, rhsContract: []int{0}},
	{name: "dense transposed weights", lhs: []int{3, 5, 8}, rhs: []int{6, 8}, lhsContract: []int{2}, rhsContract: []int{1}},
	{name: "attention scores bqhd,bkhd->bhqk", lhs: []int{2, 5, 3, 4}, rhs: []int{2, 7, 3, 4},
		lhsContract: []int{3}, lhsBatch: []int{0, 2}, rhsContract: []int{3}, rhsBatch: []int{0, 2}},
	{name: "attention values bhqk,bkhd->bhqd", lhs: []int{2, 3, 5, 7}, rhs: []int{2, 7, 3, 4},
		lhsContract: []int{3}, lhsBatch: []int{0, 1}, rhsContract: []int{1}, rhsBatch: []int{0, 2}},
	{name: "two contracted axes out of order", lhs: []int{4, 3, 5, 2}, rhs: []int{2, 6, 3},
		lhsContract: []int{1, 3}, rhsContract: []int{2, 0}},
	{name: "batch last", lhs: []int{5, 3, 4}, rhs: []int{3, 6, 4}, lhsContract: []int{1}, lhsBatch: []int{2},
		rhsContract: []int{0}, rhsBatch: []int{2}},
	{name: "outer product", lhs: []int{3, 2}, rhs: []int{4}},
}

func randomTensor(rng *rand.Rand, dims []int) *tensors.Tensor {
	n := 1
	for _, d := range dims {
		n *= d
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return tensors.FromFlatDataAndDimensions(v, dims...)
}

// gradients runs d(sum(out·w))/d(lhs, rhs) for c on backend.
func gradients(t *testing.T, backend backends.Backend, c dotCase, lhs, rhs *tensors.Tensor, seed uint64) [][]float32 {
	t.Helper()
	exec, err := NewExec(backend, func(l, r *Node) []*Node {
		out := DotGeneral(l, c.lhsContract, c.lhsBatch, r, c.rhsContract, c.rhsBatch)
		w := randomTensor(rand.New(rand.NewPCG(seed, 7)), out.Shape().Dimensions)
		loss := ReduceAllSum(Mul(out, Const(l.Graph(), w)))
		return Gradient(loss, l, r)
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Exec(lhs, rhs)
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	res := make([][]float32, len(out))
	for i, o := range out {
		if res[i], err = tensors.CopyFlatData[float32](o); err != nil {
			t.Fatal(err)
		}
	}
	return res
}

func testBackends(t testing.TB) map[string]backends.Backend {
	t.Helper()
	bs := map[string]backends.Backend{}
	goB, err := backends.NewWithConfig("go")
	if err != nil {
		t.Fatal(err)
	}
	bs["go"] = goB
	// XLA is what the gradients are for; make test installs its CPU plugin.
	if _, err := pjrt.Configure(pjrt.DefaultSearch(), os.Setenv); err != nil {
		t.Logf("pjrt: %v", err)
	}
	p, ok := pjrt.Available("cpu")
	if !ok {
		t.Fatalf("no PJRT CPU plugin (PJRT_PLUGIN_LIBRARY_PATH=%q): `make test` installs it", os.Getenv(pjrt.EnvLibraryPath))
	}
	xla.EnableAutoInstall(false)
	xb, err := xla.New(p)
	if err != nil {
		t.Fatalf("XLA backend: %v", err)
	}
	bs["xla"] = xb
	return bs
}

// TestSameGradientsAsGoMLX compares every case's gradients with GoMLX's
// own on the pure-Go backend and on XLA, each gradient written both ways
// (v·other and other·v) and the way the cost model picks.
func TestSameGradientsAsGoMLX(t *testing.T) {
	defer func() { chooseOtherFirst = otherFirstIsCheaper }()
	ways := map[string]func(this, other operand, v *Node, nb int) bool{
		"cheaper":     otherFirstIsCheaper,
		"v first":     func(operand, operand, *Node, int) bool { return false },
		"other first": func(operand, operand, *Node, int) bool { return true },
	}
	for way, choose := range ways {
		chooseOtherFirst = choose
		t.Run(way, func(t *testing.T) { sameGradientsAsGoMLX(t) })
	}
}

func sameGradientsAsGoMLX(t *testing.T) {
	for bname, backend := range testBackends(t) {
		for i, c := range cases {
			t.Run(bname+"/"+c.name, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(i), 1))
				lhs, rhs := randomTensor(rng, c.lhs), randomTensor(rng, c.rhs)
				Install()
				ours := gradients(t, backend, c, lhs, rhs, uint64(i))
				Restore()
				theirs := gradients(t, backend, c, lhs, rhs, uint64(i))
				Install()
				for k := range ours {
					if len(ours[k]) != len(theirs[k]) {
						t.Fatalf("gradient %d: %d values, GoMLX's %d", k, len(ours[k]), len(theirs[k]))
					}
					for j := range ours[k] {
						if d := math.Abs(float64(ours[k][j] - theirs[k][j])); d > 1e-4*(1+math.Abs(float64(theirs[k][j]))) {
							t.Fatalf("gradient %d[%d] = %v, GoMLX's %v", k, j, ours[k][j], theirs[k][j])
						}
					}
				}
			})
		}
	}
}

// TestDotMatchesGoMLX does the same for Dot's three forms.
func TestDotMatchesGoMLX(t *testing.T) {
	backend, err := backends.NewWithConfig("go")
	if err != nil {
		t.Fatal(err)
	}
	for i, dims := range [][2][]int{{{4, 3}, {3, 5}}, {{4, 3}, {3}}, {{3}, {3}}} {
		t.Run(fmt.Sprint(dims), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(i), 2))
			lhs, rhs := randomTensor(rng, dims[0]), randomTensor(rng, dims[1])
			run := func() [][]float32 {
				exec := MustNewExec(backend, func(l, r *Node) []*Node {
					out := Dot(l, r)
					w := Const(l.Graph(), randomTensor(rand.New(rand.NewPCG(9, 9)), out.Shape().Dimensions))
					if out.Rank() == 0 {
						w = Const(l.Graph(), float32(1.5))
					}
					return Gradient(ReduceAllSum(Mul(out, w)), l, r)
				})
				out := exec.MustExec(lhs, rhs)
				a, _ := tensors.CopyFlatData[float32](out[0])
				b, _ := tensors.CopyFlatData[float32](out[1])
				return [][]float32{a, b}
			}
			Install()
			ours := run()
			Restore()
			theirs := run()
			Install()
			for k := range ours {
				for j := range ours[k] {
					if d := math.Abs(float64(ours[k][j] - theirs[k][j])); d > 1e-4*(1+math.Abs(float64(theirs[k][j]))) {
						t.Fatalf("gradient %d[%d] = %v, GoMLX's %v", k, j, ours[k][j], theirs[k][j])
					}
				}
			}
		})
	}
}

// TestNoProductTensor checks what the package is for: the gradient graph
// of a Dense layer holds no tensor larger than its operands and output
// (GoMLX's own builds batch×in×out, here 64×96×80 = 491,520 elements).
func TestNoProductTensor(t *testing.T) {
	backend, err := backends.NewWithConfig("go")
	if err != nil {
		t.Fatal(err)
	}
	largest := func() int {
		g := NewGraph(backend, "dense")
		x := Parameter(g, "x", shapes.Make(dtypes.Float32, 64, 96))
		w := Parameter(g, "w", shapes.Make(dtypes.Float32, 96, 80))
		out := Dot(x, w)
		y := DotGeneral(InsertAxes(x, 0), []int{2}, nil, w, []int{0}, nil)
		_ = Gradient(ReduceAllSum(Add(out, Squeeze(y, 0))), x, w)
		most := 0
		for _, n := range g.Nodes() {
			if n.NumOutputs() == 1 {
				most = max(most, n.Shape().Size())
			}
		}
		g.Finalize()
		return most
	}
	Install()
	if got := largest(); got > 96*80 {
		t.Errorf("the gradient graph holds a tensor of %d elements (operands: 6144 and 7680)", got)
	}
	Restore()
	defer Install()
	if got := largest(); got < 64*96*80 {
		t.Errorf("GoMLX's own gradient's largest tensor is %d elements: the test no longer shows the difference", got)
	}
}

// TestUnreadableAxesFallBack: a node whose axes cannot be read keeps
// GoMLX's gradient (readDotAxes fails on a node of another type).
func TestUnreadableAxesFallBack(t *testing.T) {
	backend, err := backends.NewWithConfig("go")
	if err != nil {
		t.Fatal(err)
	}
	g := NewGraph(backend, "x")
	x := Parameter(g, "x", shapes.Make(dtypes.Float32, 2))
	if _, err := readDotAxes(Neg(x)); err == nil {
		t.Fatal("read DotGeneral axes from a Neg node")
	}
	g.Finalize()
}

// Rsqrt's gradient is −½·x^(−3/2) (GoMLX v0.26.0 has none: differentiating
// it panics).
func TestRsqrtGradient(t *testing.T) {
	for bname, backend := range testBackends(t) {
		xs := []float32{0.25, 1, 4, 9.5}
		exec := MustNewExec(backend, func(x *Node) []*Node {
			return Gradient(ReduceAllSum(MulScalar(Rsqrt(x), 3)), x)
		})
		got := tensors.MustCopyFlatData[float32](exec.MustExec(xs)[0])
		for i, x := range xs {
			want := 3 * -0.5 * math.Pow(float64(x), -1.5)
			if math.Abs(float64(got[i])-want) > 1e-5*math.Abs(want) {
				t.Errorf("%s: d/dx 3/√x at %v = %v, want %v", bname, x, got[i], want)
			}
		}
	}
	// GoMLX has none: Install added it, and Restore leaves it.
	Restore()
	defer Install()
	if VJPRegistration[NodeTypeRsqrt] == nil {
		t.Error("Restore removed Rsqrt's gradient")
	}
	mu.Lock()
	defer mu.Unlock()
	if f := gomlxRsqrt; f != nil {
		t.Errorf("GoMLX v0.26.0 has a gradient of Rsqrt: this package's is no longer needed")
	}
}

// The cost model picks, for a layer's weights, the way that transposes
// the smaller of the activations and the output's gradient.
func TestCheaperWayForWeights(t *testing.T) {
	backend, err := backends.NewWithConfig("go")
	if err != nil {
		t.Fatal(err)
	}
	g := NewGraph(backend, "w")
	defer g.Finalize()
	pick := func(in, out int) bool {
		x := Parameter(g, fmt.Sprintf("x%d_%d", in, out), shapes.Make(dtypes.Float32, 12, 64, in))
		w := Parameter(g, fmt.Sprintf("w%d_%d", in, out), shapes.Make(dtypes.Float32, in, out))
		y := DotGeneral(x, []int{2}, nil, w, []int{0}, nil)
		lhs := operand{node: x, contracting: []int{2}, free: []int{0, 1}, outFree: []int{0, 1}}
		rhs := operand{node: w, contracting: []int{0}, free: []int{1}, outFree: []int{2}}
		return otherFirstIsCheaper(rhs, lhs, y, 0)
	}
	if !pick(128, 512) { // x is 4× smaller than the gradient: xᵀ·v
		t.Error("C→4C: v·x chosen, which transposes the 4× larger gradient")
	}
	if pick(512, 128) { // the gradient is 4× smaller: (vᵀ·x)ᵀ
		t.Error("4C→C: x·v chosen, which transposes the 4× larger activations")
	}
}
