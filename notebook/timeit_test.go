package notebook

import (
	"strings"
	"testing"
	"time"
)

// timeitLine is IPython's report line.
const timeitLine = `^\d[\d.]* (ns|µs|ms|s) ± \d[\d.]* (ns|µs|ms|s) per loop \(mean ± std\. dev\. of \d+ runs?, [\d,]+ loops? each\)\n$`

func TestTimeitReportsAsIPythonAndKeepsNothing(t *testing.T) {
	e := newEngine(t)
	mustRun(t, e, "func fib(n int) int {\n\tif n < 2 {\n\t\treturn n\n\t}\n\treturn fib(n-1) + fib(n-2)\n}\ncalls := 0")
	_, io := mustRun(t, e, "%timeit -n 100 -r 3 x := fib(10); calls++")
	if out := io.text("stdout"); !regexpMatch(timeitLine, out) || !strings.Contains(out, "of 3 runs, 100 loops each") {
		t.Fatalf("%%timeit printed %q", out)
	}
	// The statement ran 3×100 times, and the session has no x.
	if r, _ := mustRun(t, e, "calls"); resultText(r) != "300" {
		t.Errorf("calls = %s, want 300", resultText(r))
	}
	if r, _ := run(t, e, "x"); r.Err == nil || !strings.Contains(r.Err.Value, "undefined: x") {
		t.Errorf("x after %%timeit: %v", r.Err)
	}
	// The loop count chosen: a power of ten whose loops take ≥ 0.2 s.
	_, io = mustRun(t, e, "%timeit -r 1 fib(15)")
	if out := io.text("stdout"); !regexpMatch(timeitLine, out) || !strings.Contains(out, "1 run, ") {
		t.Fatalf("%%timeit printed %q", out)
	}
	// -o: the result as the cell's; -q: nothing printed.
	r, io := mustRun(t, e, "%timeit -q -o -n 10 -r 2 fib(5) + 1")
	if io.text("stdout") != "" || !strings.HasPrefix(resultText(r), "<TimeitResult : ") {
		t.Errorf("-q -o: %q, result %q", io.text("stdout"), resultText(r))
	}
}

func TestCellTimeitTimesTheCellWithItsSetup(t *testing.T) {
	e := newEngine(t)
	mustRun(t, e, "setups, loops := 0, 0")
	_, io := mustRun(t, e, "%%timeit -n 5 -r 2 s := make([]int, 100); setups++\nfor i := range s {\n\ts[i] = i\n}\nloops++")
	if out := io.text("stdout"); !regexpMatch(timeitLine, out) {
		t.Fatalf("%%%%timeit printed %q", out)
	}
	if r, _ := mustRun(t, e, "setups*100 + loops"); resultText(r) != "210" {
		t.Errorf("setups*100 + loops = %s, want 210 (setup once per repetition)", resultText(r))
	}
}

func TestTimeitErrorsReadAsTheCells(t *testing.T) {
	e := newEngine(t)
	// Go's compile error, at the statement's line and column in the cell.
	r, _ := run(t, e, "// a comment\n%timeit -n 1 undefinedThing + 1")
	if r.Err == nil {
		t.Fatal("an undefined name compiled")
	}
	tb := strings.Join(r.Err.Traceback, "\n")
	if !regexpMatch(`cell\[\d+\]:2:14: undefined: undefinedThing`, r.Err.Value) || !strings.Contains(tb, "%timeit -n 1 undefinedThing + 1\n"+strings.Repeat(" ", 4+13)+"^") {
		t.Errorf("error %q\n%s", r.Err.Value, tb)
	}
	// A panic: reported once, at its line; the session goes on.
	mustRun(t, e, "tries := 0")
	r, _ = run(t, e, "%%timeit -n 3\ntries++\nvar s []int\n_ = s[5]")
	if r.Err == nil || !strings.Contains(r.Err.Value, "index out of range [5] with length 0") {
		t.Fatalf("panic: %v", r.Err)
	}
	if tb := strings.Join(r.Err.Traceback, "\n"); !regexpMatch(`cell\[\d+\]:4`, tb) {
		t.Errorf("the panic's line is not the cell's line 4:\n%s", tb)
	}
	if r, _ := mustRun(t, e, "tries"); resultText(r) != "1" {
		t.Errorf("tries = %s: the panicking statement ran again", resultText(r))
	}
	// Bad options name themselves.
	r, _ = run(t, e, "%timeit -n 0 tries++")
	if r.Err == nil || !strings.Contains(r.Err.Value, "-n needs a positive whole number") {
		t.Errorf("-n 0: %v", r.Err)
	}
}

func TestTimeitStopsAtAnInterrupt(t *testing.T) {
	e := newEngine(t)
	mustRun(t, e, "import (\n\t\"fmt\"\n\t\"sync\"\n)\nvar once sync.Once\nfunc spin() int { n := 0; for i := 0; i < 1000; i++ { n += i }; return n }")
	io, started := startSignal()
	r, took := interruptAfter(t, e, `%timeit -n 1000000000 -r 100 once.Do(func() { fmt.Println("started") }); spin()`, 100*time.Millisecond, io, started)
	if r.Err == nil || r.Err.Name != "Interrupted" {
		t.Fatalf("interrupted %%timeit: %+v", r.Err)
	}
	notStuck(t, r)
	t.Logf("the interrupt took %v", took)
	mustRun(t, e, "spin()")
}
