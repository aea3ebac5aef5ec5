// Command sessiondepth measures what a session's length costs code that
// unwinds stacks: a deep recursion that grows its goroutine's stack (each
// growth copies every frame, and the runtime looks each frame's code up by
// address), and runtime.GC (which scans every stack and every module), in
// a cell run after N other cells, beside the same cell in a new session
// (the peer, same run, same process).
//
// Each cell is a plugin and each plugin a module in the runtime's list; the
// runtime walks that list to find a frame's module. modreg.Promote keeps
// the newest cell's module first; without it the deep stacks after 600
// cells took 80 times as long as in a new session.
//
//	go run -ldflags="$LDFLAGS" ./bench/sessiondepth [-cells 600] [-every 200]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/goaccel/goaccel/notebook/build"
	"github.com/goaccel/goaccel/notebook/compiled"
)

func main() {
	cells := flag.Int("cells", 600, "distinct cells to run before the last probe")
	every := flag.Int("every", 200, "probe after every this many cells")
	flag.Parse()
	if err := run(*cells, *every); err != nil {
		fmt.Fprintln(os.Stderr, "sessiondepth:", err)
		os.Exit(1)
	}
}

func run(cells, every int) error {
	ctx := context.Background()
	cache, err := os.MkdirTemp("", "goaccel-bench-depth-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(cache)
	b, err := build.New(ctx, build.Options{CacheDir: cache})
	if err != nil {
		return err
	}
	defer b.Close()
	s := compiled.New(compiled.Options{Builder: b, ID: "bench"})
	n := 0
	exec := func(src string) (*compiled.Result, error) {
		n++
		return s.Run(ctx, src, n, nil)
	}
	if _, err := exec("import (\"fmt\"; \"runtime\"; \"time\")\nvar _, _ = time.Now, runtime.GC\nfunc init() { fmt.Print() }"); err != nil {
		return err
	}
	// Measure with the shared library, as a session does once it is built.
	for {
		lib, why := b.SharedLibrary()
		if lib != "" || why != nil {
			fmt.Printf("shared library: %s %v\n", lib, why)
			break
		}
		time.Sleep(time.Second)
	}
	var peerGC, peerStacks time.Duration
	probe := func(k int) error {
		r, err := exec(fmt.Sprintf(`
func deep%[1]d(n int) int {
	var pad [64]byte
	if n == 0 {
		return int(pad[3])
	}
	return deep%[1]d(n-1) + int(pad[n%%64])
}
t0 := time.Now()
for i := 0; i < 20; i++ {
	runtime.GC()
}
gc := time.Since(t0)
t0 = time.Now()
for i := 0; i < 50; i++ {
	done := make(chan int)
	go func() { done <- deep%[1]d(20000) }()
	<-done
}
[2]time.Duration{gc, time.Since(t0)}
`, k))
		if err != nil {
			return err
		}
		var times [2]time.Duration
		ok := len(r.Values) == 1
		if ok {
			times, ok = r.Values[0].([2]time.Duration)
		}
		if !ok {
			return fmt.Errorf("probe values %#v, want one [2]time.Duration", r.Values)
		}
		gc, stacks := times[0], times[1]
		if k == 0 {
			peerGC, peerStacks = gc, stacks
			fmt.Printf("%-28s %12s %14s\n", "", "20 × GC", "50 deep stacks")
			fmt.Printf("%-28s %12v %14v\n", "new session (peer)", gc.Round(time.Millisecond), stacks.Round(time.Millisecond))
			return nil
		}
		fmt.Printf("%-28s %12v %14v   ratios %.2f× %.2f×\n", fmt.Sprintf("after %d cells", k), gc.Round(time.Millisecond), stacks.Round(time.Millisecond),
			float64(gc)/float64(peerGC), float64(stacks)/float64(peerStacks))
		return nil
	}
	if err := probe(0); err != nil {
		return err
	}
	for i := 1; i <= cells; i++ {
		if _, err := exec(fmt.Sprintf("func f%d(x int) int { return x*%d + len(fmt.Sprint(x)) }\n_ = f%d(3)\n", i, i, i)); err != nil {
			return fmt.Errorf("cell %d: %w", i, err)
		}
		if i%every == 0 {
			if err := probe(i); err != nil {
				return err
			}
		}
	}
	return nil
}
