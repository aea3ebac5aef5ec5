// Command session measures what a long notebook session costs, with cells
// linked against the shared library (the default) beside cells that carry
// every package they use (GOACCEL_SHARED_LIB=0), in one run:
//
//   - an edited cell run again and again (a function and a loop, with a
//     constant changed each time, as one tunes a training cell): the
//     kernel's resident memory and the build cache after each run;
//   - many distinct cells (a new function each): their time, and resident
//     memory along the way (the curve);
//   - a new small loop cell: its time from source to result.
//
// Each mode runs in a child process of its own, with a build cache of its
// own (so the cache growth is this session's alone), and the parent prints
// both beside each other with their ratios.
//
//	go run -ldflags="$LDFLAGS" ./bench/session [-reruns 60] [-cells 200] [-loops 20]
//
// (bench/session/run.sh passes the Makefile's LDFLAGS).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/goaccel/goaccel/notebook/build"
	"github.com/goaccel/goaccel/notebook/compiled"
)

// result is what a child reports.
type result struct {
	Mode      string    `json:"mode"`
	Library   string    `json:"library"`
	RerunRSS  []float64 `json:"rerun_rss_mib"`   // after each re-run
	RerunDisk []float64 `json:"rerun_cache_mib"` // cells in the cache after each re-run
	CellsRSS  []float64 `json:"cells_rss_mib"`   // after every 50 distinct cells
	LoopMs    []float64 `json:"loop_ms"`         // each new loop cell
	FuncMs    []float64 `json:"func_ms"`         // each distinct cell (a new function, called)
	FirstS    float64   `json:"first_s"`         // a new session's first cell (it imports and declares)
}

func main() {
	child := flag.String("child", "", "run one mode (shared or classic) and write its result as JSON to -out")
	outFile := flag.String("out", "", "the child's result file (cells print on stdout)")
	reruns := flag.Int("reruns", 60, "runs of the edited cell")
	cells := flag.Int("cells", 200, "distinct cells")
	loops := flag.Int("loops", 20, "new loop cells")
	only := flag.String("only", "", "run one mode (shared or classic) and print its figures alone")
	flag.Parse()
	if *child != "" {
		r, err := measure(*child, *reruns, *cells, *loops)
		if err != nil {
			fmt.Fprintln(os.Stderr, "session:", err)
			os.Exit(1)
		}
		data, _ := json.Marshal(r)
		if err := os.WriteFile(*outFile, data, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "session:", err)
			os.Exit(1)
		}
		return
	}
	modes := []string{"shared", "classic"}
	if *only != "" {
		modes = []string{*only}
	}
	var results []result
	for _, mode := range modes {
		out := filepath.Join(os.TempDir(), fmt.Sprintf("goaccel-bench-session-%d-%s.json", os.Getpid(), mode))
		cmd := exec.Command(os.Args[0], "-child", mode, "-out", out, fmt.Sprint("-reruns=", *reruns), fmt.Sprint("-cells=", *cells), fmt.Sprint("-loops=", *loops))
		cmd.Env = os.Environ()
		if mode == "classic" {
			cmd.Env = append(cmd.Env, "GOACCEL_SHARED_LIB=0")
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "session: %s: %v\n", mode, err)
			os.Exit(1)
		}
		data, err := os.ReadFile(out)
		os.Remove(out)
		var r result
		if err == nil {
			err = json.Unmarshal(data, &r)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "session: %s: %v\n", mode, err)
			os.Exit(1)
		}
		results = append(results, r)
	}
	if len(results) == 1 {
		results = append(results, result{Mode: "not run"})
	}
	report(results)
}

// perRun is the growth per run from the 10th run on (the first runs load
// what every later run shares).
func perRun(v []float64) float64 {
	from := min(10, len(v)-1)
	if len(v)-1 <= from {
		return 0
	}
	return (v[len(v)-1] - v[from]) / float64(len(v)-1-from)
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

func report(rs []result) {
	sh, cl := rs[0], rs[1]
	fmt.Printf("shared library: %s\n", sh.Library)
	fmt.Printf("%-44s%12s%12s%10s   target\n", "", "shared", "classic", "ratio")
	row := func(name string, a, b float64, target string) {
		ratio := 0.0
		if a != 0 {
			ratio = b / a
		}
		fmt.Printf("%-44s%12.2f%12.2f%10.1f   %s\n", name, a, b, ratio, target)
	}
	row(fmt.Sprintf("edited cell x%d: RSS MiB per run", len(sh.RerunRSS)), perRun(sh.RerunRSS), perRun(cl.RerunRSS), "≤ 1")
	row(fmt.Sprintf("edited cell x%d: cache MiB per run", len(sh.RerunDisk)), perRun(sh.RerunDisk), perRun(cl.RerunDisk), "≤ 2")
	row("edited cell: RSS MiB after the last run", last(sh.RerunRSS), last(cl.RerunRSS), "")
	row(fmt.Sprintf("%d distinct cells: RSS MiB at the end", 50*(len(sh.CellsRSS)-1)), last(sh.CellsRSS), last(cl.CellsRSS), "< 1024 at 1000")
	row("new loop cell: median ms", median(sh.LoopMs), median(cl.LoopMs), "≤ 150")
	row("new function cell: median ms", median(sh.FuncMs), median(cl.FuncMs), "≤ 300")
	row("a new session's first cell (s)", sh.FirstS, cl.FirstS, "≤ 2")
	fmt.Println("RSS curve over distinct cells (MiB, every 50 cells):")
	fmt.Printf("  shared:  %s\n", curve(sh.CellsRSS))
	fmt.Printf("  classic: %s\n", curve(cl.CellsRSS))
}

func last(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	return v[len(v)-1]
}

func curve(v []float64) string {
	var b strings.Builder
	for i, x := range v {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%.0f", x)
	}
	return b.String()
}

func measure(mode string, reruns, cells, loops int) (*result, error) {
	ctx := context.Background()
	start := time.Now()
	cache, err := os.MkdirTemp("", "goaccel-bench-session-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(cache)
	b, err := build.New(ctx, build.Options{CacheDir: cache})
	if err != nil {
		return nil, err
	}
	defer b.Close()
	s := compiled.New(compiled.Options{Builder: b, ID: "bench"})
	r := &result{Mode: mode}
	n := 0
	run := func(src string) error {
		n++
		_, err := s.Run(ctx, src, n, nil)
		return err
	}
	if err := run("import (\"fmt\"; \"math\"; \"strings\")\nvar _ = strings.ToUpper\nvar _ = math.Pi\nfunc init() { fmt.Print() }"); err != nil {
		return nil, err
	}
	r.FirstS = time.Since(start).Seconds()
	lib, whyNot := b.SharedLibrary()
	r.Library = lib
	if lib == "" && whyNot != nil {
		r.Library = "none: " + whyNot.Error()
	}
	// The edited cell.
	for i := 0; i < reruns; i++ {
		src := fmt.Sprintf(`
func step(x float64) float64 { return math.Tanh(x*0.5 + %d.0/1000) }

x := 0.0
for i := 0; i < 1000; i++ {
	x = step(x)
}
fmt.Println(strings.Repeat("=", 3), x)
`, i)
		if err := run(src); err != nil {
			return nil, fmt.Errorf("re-run %d: %w", i, err)
		}
		r.RerunRSS = append(r.RerunRSS, rss())
		r.RerunDisk = append(r.RerunDisk, cellsMiB(cache))
	}
	// Distinct cells.
	r.CellsRSS = append(r.CellsRSS, rss())
	for i := 1; i <= cells; i++ {
		t0 := time.Now()
		if err := run(fmt.Sprintf("func f%d(x int) int { return x*%d + len(fmt.Sprint(x)) }\n_ = f%d(3)\n", i, i, i)); err != nil {
			return nil, fmt.Errorf("cell %d: %w", i, err)
		}
		r.FuncMs = append(r.FuncMs, float64(time.Since(t0).Microseconds())/1000)
		if i%50 == 0 {
			r.CellsRSS = append(r.CellsRSS, rss())
		}
	}
	// New loop cells.
	for i := 0; i < loops; i++ {
		src := fmt.Sprintf("total := 0\nfor i := 0; i < %d; i++ {\n\ttotal += i\n}\nfmt.Println(total)\n", 10+i)
		t0 := time.Now()
		if err := run(src); err != nil {
			return nil, fmt.Errorf("loop cell %d: %w", i, err)
		}
		r.LoopMs = append(r.LoopMs, float64(time.Since(t0).Microseconds())/1000)
	}
	return r, nil
}

// rss is the process's resident memory in MiB, after a collection that
// returns what it can to the system.
func rss() float64 {
	runtime.GC()
	debug.FreeOSMemory()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			var kb float64
			fmt.Sscan(f[1], &kb)
			return kb / 1024
		}
	}
	return 0
}

// cellsMiB is the size of the built cells in the cache (the shared library
// is counted once, not per run).
func cellsMiB(cache string) float64 {
	var total int64
	filepath.WalkDir(cache, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(p, string(filepath.Separator)+"cells"+string(filepath.Separator)) {
			if fi, err := d.Info(); err == nil {
				total += fi.Size()
			}
		}
		return nil
	})
	return float64(total) / (1 << 20)
}
