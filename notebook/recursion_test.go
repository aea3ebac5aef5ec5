package notebook

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestEndlessRecursionIsAnError: a stack overflow would kill the kernel, so
// the guard must stop endless recursion first, and the session goes on.
func TestEndlessRecursionIsAnError(t *testing.T) {
	e := newEngine(t)
	mustRun(t, e, "kept := 1")
	start := time.Now()
	rep, _ := run(t, e, "func down(n int) int { return down(n+1) + 1 }\ndown(0)")
	if rep.Err == nil || rep.Err.Name != "StackOverflow" || !strings.Contains(rep.Err.Value, "stack exceeds") {
		t.Fatalf("endless recursion: %+v", rep.Err)
	}
	t.Logf("stopped after %v", time.Since(start))
	rep, _ = mustRun(t, e, "func fib(n int) int { if n < 2 { return n }; return fib(n-1) + fib(n-2) }\nfib(15) + kept")
	if rep.Result["text/plain"] != "611" {
		t.Fatalf("fib after the guard fired: %v", rep.Result)
	}
}

// TestSleepInLeftoverGoroutine: time.Sleep in cells wakes early on interrupt
// only; a goroutine that outlives its cell must keep sleeping full periods
// (it used to spin once its cell's context had ended).
func TestSleepInLeftoverGoroutine(t *testing.T) {
	e := newEngine(t)
	mustRun(t, e, "import \"time\"\nvar ticks int64\ngo func() { for { time.Sleep(20 * time.Millisecond); ticks++ } }()")
	rep, _ := mustRun(t, e, "time.Sleep(300 * time.Millisecond)\nticks")
	var n int
	if _, err := fmt.Sscan(rep.Result["text/plain"].(string), &n); err != nil {
		t.Fatal(err)
	}
	if n < 5 || n > 40 {
		t.Fatalf("%d ticks of 20 ms in about 300 ms", n)
	}
}

func TestEndlessRecursionThroughAClosure(t *testing.T) {
	e := newEngine(t)
	rep, _ := run(t, e, "var down func(int) int\ndown = func(n int) int { return down(n+1) + 1 }\ndown(0)")
	if rep.Err == nil || rep.Err.Name != "StackOverflow" {
		t.Fatalf("endless recursion through a closure: %+v", rep.Err)
	}
}
