// Command gonum_matmul measures what a notebook cell gets from compiled
// numeric packages: a 512×512 float64 mat.Dense Mul called from a cell (run
// by goaccel's notebook engine, yaegi, with the kernel's symbol tables)
// against the same Mul in compiled Go, in the same process, alternating
// rounds, and prints the ratio compiled time / cell time (1 = the cell runs
// at compiled speed; the target is ≥ 0.8): the median over the rounds of
// each round's ratio.
//
//	go run ./bench/gonum_matmul [-n 512] [-reps 10] [-rounds 7]
//
// The cell and the compiled code multiply the same matrices (math/rand,
// same seeds); the product's sum is compared so that both do the same work.
// It exits with status 1 when the ratio is under -min.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"reflect"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook"
	"github.com/goaccel/goaccel/symbols"
)

// randDense is the compiled twin of the cell's randDense.
func randDense(n int, seed int64) *mat.Dense {
	rng := rand.New(rand.NewSource(seed))
	d := make([]float64, n*n)
	for i := range d {
		d[i] = rng.Float64()
	}
	return mat.NewDense(n, n, d)
}

const setupCell = `import (
	"fmt"
	"math/rand"
	"time"

	"gonum.org/v1/gonum/mat"
)

func randDense(n int, seed int64) *mat.Dense {
	rng := rand.New(rand.NewSource(seed))
	d := make([]float64, n*n)
	for i := range d {
		d[i] = rng.Float64()
	}
	return mat.NewDense(n, n, d)
}

a, b := randDense(%[1]d, 1), randDense(%[1]d, 2)
var c mat.Dense
c.Mul(a, b) // warm-up`

// timingCell is the measured cell: reps products, timed inside the cell.
const timingCell = `start := time.Now()
for i := 0; i < %d; i++ {
	c.Mul(a, b)
}
fmt.Println(time.Since(start).Nanoseconds(), mat.Sum(&c))`

// cellIO collects a cell's stdout.
type cellIO struct {
	mu  sync.Mutex
	out strings.Builder
}

func (c *cellIO) Stream(name, text string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if name == "stdout" {
		c.out.WriteString(text)
	} else {
		fmt.Fprint(os.Stderr, text)
	}
}
func (c *cellIO) Display(frontend.MIMEBundle, map[string]any, string)       {}
func (c *cellIO) UpdateDisplay(frontend.MIMEBundle, map[string]any, string) {}
func (c *cellIO) ClearOutput(bool)                                          {}
func (c *cellIO) Input(context.Context, string, bool) (string, error) {
	return "", frontend.ErrStdinNotAllowed
}

var count int

func run(e *notebook.Engine, code string) (string, error) {
	count++
	io := &cellIO{}
	rep := e.Execute(context.Background(), frontend.ExecuteRequest{Code: code, ExecutionCount: count}, io)
	if rep.Err != nil {
		return "", rep.Err
	}
	return io.out.String(), nil
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func fmtRatios(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(x, 'f', 2, 64)
	}
	return strings.Join(parts, " ")
}

func main() {
	n := flag.Int("n", 512, "matrix size")
	reps := flag.Int("reps", 10, "products per timed round")
	rounds := flag.Int("rounds", 7, "alternating rounds (compiled, then cell)")
	minRatio := flag.Float64("min", 0.8, "fail when the median per-round ratio is below this")
	flag.Parse()

	e, err := notebook.New(notebook.Options{Symbols: []map[string]map[string]reflect.Value{symbols.Symbols}, Version: "bench"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "gonum_matmul:", err)
		os.Exit(2)
	}
	defer e.Close()
	if _, err := run(e, fmt.Sprintf(setupCell, *n)); err != nil {
		fmt.Fprintln(os.Stderr, "gonum_matmul: setup cell:", err)
		os.Exit(2)
	}

	a, b := randDense(*n, 1), randDense(*n, 2)
	var c mat.Dense
	c.Mul(a, b)

	var compiled, cell []float64 // ns per product
	for r := 0; r < *rounds; r++ {
		start := time.Now()
		for i := 0; i < *reps; i++ {
			c.Mul(a, b)
		}
		compiled = append(compiled, float64(time.Since(start).Nanoseconds())/float64(*reps))

		out, err := run(e, fmt.Sprintf(timingCell, *reps))
		if err != nil {
			fmt.Fprintln(os.Stderr, "gonum_matmul: timing cell:", err)
			os.Exit(2)
		}
		f := strings.Fields(out)
		if len(f) != 2 {
			fmt.Fprintf(os.Stderr, "gonum_matmul: unexpected cell output %q\n", out)
			os.Exit(2)
		}
		ns, err1 := strconv.ParseFloat(f[0], 64)
		sum, err2 := strconv.ParseFloat(f[1], 64)
		if err1 != nil || err2 != nil {
			fmt.Fprintf(os.Stderr, "gonum_matmul: unexpected cell output %q\n", out)
			os.Exit(2)
		}
		if want := mat.Sum(&c); sum != want {
			fmt.Fprintf(os.Stderr, "gonum_matmul: the cell's product sums to %v, the compiled one to %v\n", sum, want)
			os.Exit(2)
		}
		cell = append(cell, ns/float64(*reps))
	}

	flops := 2 * float64(*n) * float64(*n) * float64(*n)
	report := func(name string, xs []float64) {
		best := xs[0]
		for _, x := range xs {
			best = min(best, x)
		}
		fmt.Printf("%-9s best %7.2f ms  median %7.2f ms  (%.2f GFLOP/s best)\n", name, best/1e6, median(xs)/1e6, flops/best)
	}
	fmt.Printf("%d×%d float64 mat.Dense Mul, %d products × %d rounds, GOMAXPROCS=%d\n", *n, *n, *reps, *rounds, runtime.GOMAXPROCS(0))
	report("compiled", compiled)
	report("cell", cell)
	// Each round's cell time is compared with the compiled time measured just
	// before it, which cancels slow changes of the machine's load; the
	// median over the rounds is the figure.
	ratios := make([]float64, len(cell))
	for i := range cell {
		ratios[i] = compiled[i] / cell[i]
	}
	ratio := median(ratios)
	fmt.Printf("cell speed / compiled speed: %.3f (median of the per-round ratios %s; target >= %.2f)\n", ratio, fmtRatios(ratios), *minRatio)
	if ratio < *minRatio {
		os.Exit(1)
	}
}
