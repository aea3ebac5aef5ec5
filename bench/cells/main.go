// Command cells measures compiled notebook cells against the same Go code
// built as a program (what `go run` runs): fib(32) (function calls: an
// interrupt check at every entry) and a dot product of two 4096-element
// slices (a tight loop: a check at every iteration), each
//
//   - in a compiled cell, as the kernel runs it (with interrupt checks),
//   - in a compiled cell generated without the checks,
//   - in the program,
//
// timed inside the code itself (best of 7 runs), in alternating rounds in
// one run of this command, best of the rounds. It prints the times and the
// ratios: checks/no checks is what interruptibility costs (target ≤ 1.05),
// cell/program what running as a cell costs in all.
//
// A tight function's speed depends on where it lands in memory (branch
// targets against cache lines): two plugins holding the same machine code
// for fib differ by up to ~10% from that alone. So each kind of cell is
// built in three layouts (an unused function of three sizes before fib) and
// its figure is the median of the three, with their range.
//
//	go run -ldflags="$LDFLAGS" ./bench/cells [-rounds 5]
//
// (the Makefile's LDFLAGS: compiled cells need the source directory and
// lazy binding; bench/cells/run.sh passes them).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/goaccel/goaccel/notebook/build"
	"github.com/goaccel/goaccel/notebook/compiled"
)

// code is the cell, and the program's body.
const code = `
func fib(n int) int {
	if n < 2 {
		return n
	}
	return fib(n-1) + fib(n-2)
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

var sink float64

// best is the best time of 7 runs of f, in nanoseconds per op.
func best(ops int, f func()) float64 {
	b := 0.0
	for r := 0; r < 7; r++ {
		t0 := time.Now()
		f()
		ns := float64(time.Since(t0).Nanoseconds()) / float64(ops)
		if r == 0 || ns < b {
			b = ns
		}
	}
	return b
}

// measure returns fib(32) in ns and the dot product in ns per element.
func measure() []float64 {
	fibNs := best(1, func() { sink += float64(fib(32)) })
	a, b := make([]float64, 4096), make([]float64, 4096)
	for i := range a {
		a[i], b[i] = float64(i%7), float64(i%5)
	}
	const reps = 2000
	dotNs := best(reps*len(a), func() {
		for r := 0; r < reps; r++ {
			sink += dot(a, b)
		}
	})
	return []float64{fibNs, dotNs}
}
`

const program = `package main

import (
	"encoding/json"
	"os"
	"time"
)
` + code + `
func main() { json.NewEncoder(os.Stdout).Encode(measure()) }
`

// padding is an unused function of about n statements, which moves what
// follows it in the plugin's code.
func padding(n int) string {
	var b strings.Builder
	b.WriteString("func pad(x int) int {\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "\tx = x*%d + %d\n", i+3, i)
	}
	b.WriteString("\treturn x\n}\n")
	return b.String()
}

func main() {
	rounds := flag.Int("rounds", 5, "alternating rounds")
	flag.Parse()
	if err := run(*rounds); err != nil {
		fmt.Fprintln(os.Stderr, "cells:", err)
		os.Exit(1)
	}
}

func run(rounds int) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "goaccel-bench-cells-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// The program: built once as go run builds it, run each round.
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte(program), 0o644); err != nil {
		return err
	}
	bin := filepath.Join(dir, "prog")
	if out, err := exec.Command("go", "build", "-o", bin, src).CombinedOutput(); err != nil {
		return fmt.Errorf("building the program: %v\n%s", err, out)
	}
	b, err := build.New(ctx, build.Options{})
	if err != nil {
		return err
	}
	defer b.Close()
	// kind → its sessions, one per layout
	sessions := map[string][]*compiled.Session{}
	for _, kind := range []string{"cell", "cell (no checks)"} {
		for l, pad := range []int{0, 6, 20} {
			s := compiled.New(compiled.Options{Builder: b, ID: fmt.Sprintf("bench-%d-%d", len(kind), l), NoInterruptChecks: kind != "cell"})
			if _, err := s.Run(ctx, "import \"time\"\n"+padding(pad)+code, 1, nil); err != nil {
				return fmt.Errorf("%s: %v", kind, err)
			}
			sessions[kind] = append(sessions[kind], s)
		}
	}
	names := []string{"go run"}
	for _, kind := range []string{"cell", "cell (no checks)"} {
		for l := range sessions[kind] {
			names = append(names, fmt.Sprintf("%s#%d", kind, l))
		}
	}
	bestOf := map[string][]float64{}
	for r := 0; r < rounds; r++ {
		for _, name := range names {
			var got []float64
			if name == "go run" {
				out, err := exec.Command(bin).Output()
				if err != nil {
					return fmt.Errorf("the program: %v", err)
				}
				if err := json.Unmarshal(out, &got); err != nil {
					return err
				}
			} else {
				kind, l, _ := strings.Cut(name, "#")
				res, err := sessions[kind][int(l[0]-'0')].Run(ctx, "measure()", 2+r, nil)
				if err != nil {
					return fmt.Errorf("%s: %v", name, err)
				}
				got = res.Values[0].([]float64)
			}
			if prev := bestOf[name]; prev == nil {
				bestOf[name] = got
			} else {
				for i := range got {
					prev[i] = min(prev[i], got[i])
				}
			}
		}
	}
	// The median of each kind's layouts, and their range.
	ranges := map[string][2][]float64{}
	for _, kind := range []string{"cell", "cell (no checks)"} {
		var med, lo, hi []float64
		for i := 0; i < 2; i++ {
			var v []float64
			for l := range sessions[kind] {
				v = append(v, bestOf[fmt.Sprintf("%s#%d", kind, l)][i])
			}
			sort.Float64s(v)
			med, lo, hi = append(med, v[len(v)/2]), append(lo, v[0]), append(hi, v[len(v)-1])
		}
		bestOf[kind] = med
		ranges[kind] = [2][]float64{lo, hi}
	}
	fmt.Printf("%-18s %24s %30s\n", "", "fib(32) (layouts)", "dot per element (layouts)")
	for _, name := range []string{"go run", "cell", "cell (no checks)"} {
		v := bestOf[name]
		fib := fmt.Sprintf("%.2fms", v[0]/1e6)
		dot := fmt.Sprintf("%.3fns", v[1])
		if r, ok := ranges[name]; ok {
			fib += fmt.Sprintf(" (%.2f–%.2f)", r[0][0]/1e6, r[1][0]/1e6)
			dot += fmt.Sprintf(" (%.3f–%.3f)", r[0][1], r[1][1])
		}
		fmt.Printf("%-18s %24s %30s\n", name, fib, dot)
	}
	ratio := func(a, b string) string {
		x, y := bestOf[a], bestOf[b]
		return fmt.Sprintf("%-30s fib %.3f   dot %.3f", a+" / "+b, x[0]/y[0], x[1]/y[1])
	}
	fmt.Println(strings.Join([]string{
		ratio("cell", "cell (no checks)") + "   (interrupt checks; target ≤ 1.05)",
		ratio("cell", "go run"),
		ratio("cell (no checks)", "go run"),
	}, "\n"))
	return nil
}
