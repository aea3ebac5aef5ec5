package compiled

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goaccel/goaccel/notebook/build"
	"github.com/goaccel/goaccel/notebook/check"
)

var (
	builderOnce sync.Once
	builder     *build.Builder
	builderErr  error
)

func newSession(t *testing.T) *Session {
	t.Helper()
	builderOnce.Do(func() {
		builder, builderErr = build.New(context.Background(), build.Options{})
	})
	if builderErr != nil {
		t.Fatal(builderErr)
	}
	return New(Options{Builder: builder, ID: strings.ReplaceAll(t.Name(), "/", "_")})
}

func runCell(t *testing.T, s *Session, n int, src string) *Result {
	t.Helper()
	r, err := s.Run(context.Background(), src, n, nil)
	if err != nil {
		var ce *check.Error
		if errors.As(err, &ce) {
			t.Fatalf("cell[%d]: %s", n, strings.Join(ce.Lines(s.Checker().Source), "\n"))
		}
		var be *BuildError
		if errors.As(err, &be) {
			t.Fatalf("cell[%d]: %v\n%s", n, err, be.Source)
		}
		t.Fatalf("cell[%d]: %v", n, err)
	}
	return r
}

func value(t *testing.T, r *Result) string {
	t.Helper()
	if len(r.Values) == 0 {
		return "<none>"
	}
	var parts []string
	for _, v := range r.Values {
		parts = append(parts, fmt.Sprintf("%v", v))
	}
	return strings.Join(parts, ", ")
}

func TestCellsCompileAndShareState(t *testing.T) {
	s := newSession(t)
	runCell(t, s, 1, "func fib(n int) int {\n\tif n < 2 {\n\t\treturn n\n\t}\n\treturn fib(n-1) + fib(n-2)\n}")
	if got := value(t, runCell(t, s, 2, "fib(20)")); got != "6765" {
		t.Fatalf("fib(20) = %s", got)
	}
	runCell(t, s, 3, "type point struct{ x, y int }\nimport \"fmt\"")
	runCell(t, s, 4, "func (p point) String() string { return fmt.Sprintf(\"(%d,%d)\", p.x, p.y) }")
	runCell(t, s, 5, "p := point{1, 2}\nq := &point{y: 5}")
	if got := value(t, runCell(t, s, 6, `fmt.Sprintf("%v %+v %T %v", p, struct{ A point }{p}, p, *q)`)); got != "(1,2) {A:(1,2)} main.point (0,5)" {
		t.Fatalf("got %q", got)
	}
	runCell(t, s, 7, "func norm(p point) int { return p.x*p.x + p.y*p.y }\np.x = 3")
	if got := value(t, runCell(t, s, 8, "norm(p) + q.y")); got != "18" {
		t.Fatalf("norm = %s", got)
	}
	// A variable redefined with the same type keeps its storage.
	runCell(t, s, 9, "n := 1\nfunc getN() int { return n }")
	runCell(t, s, 10, "n := 41\nn++")
	if got := value(t, runCell(t, s, 11, "getN()")); got != "42" {
		t.Fatalf("getN() = %s", got)
	}
	// Late binding: g calls the newest f.
	runCell(t, s, 12, "func f() int { return 1 }\nfunc g() int { return f() * 10 }")
	runCell(t, s, 13, "func f() int { return 2 }")
	if got := value(t, runCell(t, s, 14, "g()")); got != "20" {
		t.Fatalf("g() = %s", got)
	}
	// Generics across cells.
	runCell(t, s, 15, "func Map[T, U any](xs []T, f func(T) U) []U {\n\tvar out []U\n\tfor _, x := range xs {\n\t\tout = append(out, f(x))\n\t}\n\treturn out\n}\ntype stack[T any] struct{ items []T }\nfunc (s *stack[T]) push(v T) { s.items = append(s.items, v) }")
	if got := value(t, runCell(t, s, 16, "var st stack[string]\nst.push(\"a\")\nMap([]int{1, 2}, func(i int) string { return fmt.Sprint(i * 10) })")); got != "[10 20]" {
		t.Fatalf("Map = %s", got)
	}
	// Interfaces with unexported methods across cells.
	runCell(t, s, 17, "type shape interface{ area() float64 }")
	runCell(t, s, 18, "type sq struct{ s float64 }\nfunc (q sq) area() float64 { return q.s * q.s }")
	if got := value(t, runCell(t, s, 19, "var sh shape = sq{3}\nsh.area()")); got != "9" {
		t.Fatalf("area = %s", got)
	}
}

func TestRuntimeErrors(t *testing.T) {
	s := newSession(t)
	_, err := s.Run(context.Background(), "var s []int\n_ = s[3]", 1, nil)
	var p *Panic
	if !errors.As(err, &p) || fmt.Sprint(p.Value) != "runtime error: index out of range [3] with length 0" {
		t.Fatalf("want an index panic, got %v", err)
	}
	if !strings.Contains(string(p.Stack), "cell[1]:2") {
		t.Fatalf("stack without the cell's line:\n%s", p.Stack)
	}
	_, err = s.Run(context.Background(), "import \"os\"\nfunc main() {\n\tdefer println(\"deferred\")\n\tos.Exit(3)\n}", 2, nil)
	var ex *Exit
	if !errors.As(err, &ex) || ex.Code != 3 {
		t.Fatalf("want exit 3, got %v", err)
	}
	// The cell sleeps until the goroutine's panic ends it.
	_, err = s.Run(context.Background(), "import \"time\"\ngo func() { panic(\"in goroutine\") }()\ntime.Sleep(time.Hour)", 3, nil)
	if !errors.As(err, &p) || !p.Goroutine || fmt.Sprint(p.Value) != "in goroutine" {
		t.Fatalf("want a goroutine panic, got %v", err)
	}
	// What ran stays, and the session goes on.
	_, err = s.Run(context.Background(), "a := 1\nb := a / (a - 1)\nc := 3", 4, nil)
	if !errors.As(err, &p) || fmt.Sprint(p.Value) != "runtime error: integer divide by zero" {
		t.Fatalf("want a division panic, got %v", err)
	}
	if s.Checker().Lookup("a") == nil || s.Checker().Lookup("b") != nil || s.Checker().Lookup("c") != nil {
		t.Fatal("a should be defined, b and c not")
	}
	if got := value(t, runCell(t, s, 5, "a + 1")); got != "2" {
		t.Fatalf("a + 1 = %s", got)
	}
}

func TestInterruptStopsLoops(t *testing.T) {
	s := newSession(t)
	runCell(t, s, 1, "func spin() {\n\tfor {\n\t}\n}")
	ctx, cancel := context.WithCancel(context.Background())
	go func() { cancel() }()
	_, err := s.Run(ctx, "spin()", 2, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want canceled, got %v", err)
	}
	if got := value(t, runCell(t, s, 3, "1 + 1")); got != "2" {
		t.Fatalf("after interrupt: %s", got)
	}
}

// TestVarStatementAmongStatements: `var x T` between statements becomes an
// assignment of T's zero value that later code in the cell (a closure
// here) sees under its own name.
func TestVarStatementAmongStatements(t *testing.T) {
	s := newSession(t)
	runCell(t, s, 1, "func twice(f func()) { f(); f() }")
	r := runCell(t, s, 2, "a := []float64{1, 2}\nvar sink float64\ntwice(func() {\n\tfor k := 0; k < 2; k++ {\n\t\tsink += a[k]\n\t}\n})\nsink")
	if got := value(t, r); got != "6" {
		t.Fatalf("sink = %s, want 6", got)
	}
}

// TestDeferRecoverDirectly: once a deferred function has stopped a
// second panic, its own `defer recover()` stops the first (Go's
// test/recover1.go, test6; go run prints "stopped 3" and "seq <nil>"). The
// interrupt check in such a function must stay out of line for that to
// hold in a plugin.
func TestDeferRecoverDirectly(t *testing.T) {
	s := newSession(t)
	runCell(t, s, 1, `import "fmt"
func seq() (got any) {
	defer func() { got = recover() }()
	defer func() {
		defer recover()
		defer func() { fmt.Println("stopped", recover()) }()
		panic(3)
	}()
	panic(2)
}`)
	if got := value(t, runCell(t, s, 2, "seq()")); got != "<nil>" {
		t.Fatalf("seq() = %s, want <nil> (go run)", got)
	}
}

// TestExitInACompiledPackage: os.Exit called by a package the cell uses
// (flag's ExitOnError here; testing.Main, a library's log.Fatal) ends the
// cell with its status instead of the process.
func TestExitInACompiledPackage(t *testing.T) {
	s := newSession(t)
	_, err := s.Run(context.Background(), "import \"flag\"\nfs := flag.NewFlagSet(\"tool\", flag.ExitOnError)\nfs.Parse([]string{\"-nosuch\"})\npanic(\"not reached\")", 1, nil)
	var ex *Exit
	if !errors.As(err, &ex) || ex.Code != 2 {
		t.Fatalf("err = %v, want exit status 2", err)
	}
	if got := value(t, runCell(t, s, 2, "1 + 1")); got != "2" {
		t.Fatalf("after the exit: %s", got)
	}
}

// TestSyscallExec: syscall.Exec would replace the kernel; in a cell the
// program runs as a child and its exit status ends the cell.
func TestSyscallExec(t *testing.T) {
	s := newSession(t)
	_, err := s.Run(context.Background(), "import \"syscall\"\nerr := syscall.Exec(\"/bin/sh\", []string{\"sh\", \"-c\", \"exit 4\"}, nil)\npanic(err)", 1, nil)
	var ex *Exit
	if !errors.As(err, &ex) || ex.Code != 4 {
		t.Fatalf("err = %v, want exit status 4", err)
	}
	r := runCell(t, s, 2, "import \"syscall\"\nsyscall.Exec(\"/nonexistent\", nil, nil)")
	if got := value(t, r); got != "no such file or directory" {
		t.Fatalf("exec of a missing program returned %q", got)
	}
}

// TestGeneratedCodeCornerCases: declarations that once broke the generated
// package (from Go's test programs): constraint interfaces, blank type
// parameters, a cell's own `any`, constants and nil passed by go statements.
func TestGeneratedCodeCornerCases(t *testing.T) {
	s := newSession(t)
	runCell(t, s, 1, `type Numeric interface{ ~int | ~float64 }
func double[T Numeric](v T) T { return v * 2 }
type box[_ any] struct{ n int }
func first[_ any, U any](u U) U { return u }
type _ struct{}`)
	if got := value(t, runCell(t, s, 2, "import \"fmt\"\nfmt.Sprint(double(21), box[string]{n: 1}.n, first[int](\"x\"))")); got != "42 1x" { // Sprint: no space beside a string
		t.Fatalf("got %s", got)
	}
	runCell(t, s, 3, `type any interface{ M() }`)
	r := runCell(t, s, 4, `done := make(chan int64, 2)
func send(v int64, p *int) { done <- v }
go send(1234, nil)
var p *int
go send(1<<40, p)
<-done + <-done`)
	if got := value(t, r); got != fmt.Sprint(1234+int64(1)<<40) {
		t.Fatalf("go statements passed %s", got)
	}
}

// interrupt runs src as cell n and cancels it d after it starts (after it
// was built); it returns what Run
// returned and how long the cell took to end after the cancel.
func interrupt(t *testing.T, s *Session, n int, src string, d time.Duration) (error, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var at time.Time
	var timer *time.Timer
	runHook = func(int) { timer = time.AfterFunc(d, func() { at = time.Now(); cancel() }) }
	defer func() {
		runHook = nil
		if timer != nil {
			timer.Stop()
		}
	}()
	_, err := s.Run(ctx, src, n, nil)
	if at.IsZero() {
		t.Fatalf("cell[%d] ended before the interrupt: %v", n, err)
	}
	return err, time.Since(at)
}

// patience bounds every wait for what cells do: a hang guard far above
// what a cold, busy machine needs, never a budget.
const patience = 5 * time.Minute

// prompt is what "at once" means for what an interrupt must end: the
// alternative (a read that never returns) is forever, so the bound proves
// the point however busy the machine.
const prompt = 2 * time.Minute

// settled waits until the cells' goroutines (all runs) are gone.
func settled(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for len(Goroutines()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("goroutines of cells left: %+v", Goroutines())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestInterruptStopsBlockingOperations(t *testing.T) {
	s := newSession(t)
	runCell(t, s, 1, `import (
	"context"
	"sync"
	"time"
)
func spin() {
	for {
	}
}
func recurse(n int) int { return recurse(n+1) + 1 }
func recv(ch chan int) int { return <-ch }
func send(ch chan int) { ch <- 1 }
func sel(a, b chan int) int {
	select {
	case v := <-a:
		return v
	case b <- 1:
		return 0
	}
}
func drain(ch chan int) (n int) {
	for range ch {
		n++
	}
	return n
}
func waitCtx(ctx context.Context) { <-ctx.Done() }
var mu sync.Mutex
var rw sync.RWMutex
var wg sync.WaitGroup
kept := 7`)
	cases := []string{
		"spin()",
		"recurse(0)",
		"recv(make(chan int))",
		"v, ok := <-make(chan int)\n_, _ = v, ok",
		"send(make(chan int))",
		"sel(nil, make(chan int))",
		"select {}",
		"drain(make(chan int))",
		"var nilch chan int\nfor v := range nilch {\n\t_ = v\n}",
		"waitCtx(context.Background())",
		"time.Sleep(time.Hour)",
		"wg.Add(1)\nwg.Wait()",
		"mu.Lock()\nmu.Lock()",
		"rw.Lock()\nrw.RLock()",
		"rw.Lock()",
		"var l sync.Locker = &mu\nl.Lock()",
		"var wg3 sync.WaitGroup\nwg3.Go(func() {\n\tfor {\n\t}\n})\nwg3.Wait()",
		"var c = sync.NewCond(&sync.Mutex{})\n_ = c\nfunc() { for { time.Sleep(time.Millisecond) } }()",
	}
	for i, src := range cases {
		t.Run(strings.ReplaceAll(src, "\n", "; "), func(t *testing.T) {
			// Each blocks forever; canceled (not *Stuck) means it stopped
			// within StopGrace of the interrupt.
			err, took := interrupt(t, s, 10+i, src, 100*time.Millisecond)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("want canceled, got %v", err)
			}
			t.Logf("the interrupt took %v", took)
			settled(t)
		})
	}
	if got := value(t, runCell(t, s, 100, "kept")); got != "7" {
		t.Fatalf("after interrupts: kept = %s", got)
	}
}

func TestInterruptStopsTheCellsGoroutines(t *testing.T) {
	s := newSession(t)
	runCell(t, s, 1, `import (
	"sync"
	"time"
)
var cleanedUp, out int
var cmu sync.Mutex
func worker(id int, wg *sync.WaitGroup, jobs chan int) {
	defer wg.Done()
	defer func() { cmu.Lock(); cleanedUp++; cmu.Unlock() }()
	switch id % 4 {
	case 0:
		for {
		}
	case 1:
		for j := range jobs {
			_ = j
		}
	case 2:
		time.Sleep(time.Hour)
	case 3:
		var mu sync.Mutex
		mu.Lock()
		mu.Lock()
	}
}`)
	err, took := interrupt(t, s, 2, `var wg sync.WaitGroup
jobs := make(chan int)
for i := 0; i < 8; i++ {
	wg.Add(1)
	go worker(i, &wg, jobs)
}
wg.Wait()
out = 1`, 200*time.Millisecond)
	// The workers block or loop forever; canceled (not *Stuck) means they
	// all stopped within StopGrace of the interrupt.
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want canceled, got %v", err)
	}
	t.Logf("the interrupt took %v", took)
	// Nothing of the cell runs after Run returned: every goroutine is gone
	// (their deferred calls ran), and the statement after Wait never ran.
	if gs := Goroutines(); len(gs) > 0 {
		t.Fatalf("goroutines left: %+v", gs)
	}
	if got := value(t, runCell(t, s, 3, "cleanedUp*10 + out")); got != "80" {
		t.Fatalf("cleanedUp*10 + out = %s", got)
	}
}

func TestGoroutinesOutlivingTheirCellKeepRunning(t *testing.T) {
	s := newSession(t)
	runCell(t, s, 1, "import \"time\"\nticks := 0\nstop := make(chan bool)\ngo func() {\n\tfor {\n\t\tselect {\n\t\tcase <-stop:\n\t\t\treturn\n\t\tcase <-time.After(time.Millisecond):\n\t\t\tticks++\n\t\t}\n\t}\n}()")
	var gs []CellGoroutine
	for deadline := time.Now().Add(patience); len(gs) == 0 && time.Now().Before(deadline); {
		gs = Goroutines() // the goroutine registers itself as it starts
		time.Sleep(5 * time.Millisecond)
	}
	if len(gs) != 1 || gs[0].Cell != 1 || gs[0].Origin != "cell[1]:4" {
		t.Fatalf("goroutines: %+v", gs)
	}
	// Interrupting another cell leaves it alone.
	err, _ := interrupt(t, s, 2, "select {}", 50*time.Millisecond)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want canceled, got %v", err)
	}
	if gs := Goroutines(); len(gs) != 1 {
		t.Fatalf("the first cell's goroutine stopped: %+v", gs)
	}
	gs = Goroutines()
	if gs[0].Where == "" || !strings.HasPrefix(gs[0].Where, "cell[1]:") {
		t.Fatalf("goroutine position: %+v", gs[0])
	}
	runCell(t, s, 3, "stop <- true")
	settled(t)
}

func TestInterruptedCellKeepsUnassignedNames(t *testing.T) {
	s := newSession(t)
	runCell(t, s, 1, "x := 5\ny := 1\nfunc block() int { select {} }")
	err, _ := interrupt(t, s, 2, "a := 2\nx := block()\ny, z := 7, block()\n_ = z", 100*time.Millisecond)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want canceled, got %v", err)
	}
	if got := value(t, runCell(t, s, 3, "x*100 + y*10 + a")); got != "512" {
		t.Fatalf("x*100 + y*10 + a = %s", got)
	}
	if s.Checker().Lookup("z") != nil {
		t.Fatal("z is bound")
	}
}

func TestStuckCellIsReportedAndStopsWhenItComesBack(t *testing.T) {
	s := newSession(t)
	runCell(t, s, 1, "import \"syscall\"\nvar p [2]int\nerr := syscall.Pipe(p[:])\nafter := 0\nerr")
	err, took := interrupt(t, s, 2, "buf := make([]byte, 1)\nsyscall.Read(p[0], buf)\nafter = 1", 100*time.Millisecond)
	var stuck *Stuck
	if !errors.As(err, &stuck) {
		t.Fatalf("want stuck, got %v", err)
	}
	// Reported once StopGrace has passed, not when the read returns (never).
	if took < StopGrace || took > prompt {
		t.Fatalf("stuck reported %v after the interrupt (StopGrace %v)", took, StopGrace)
	}
	if len(stuck.Goroutines) != 1 || stuck.Goroutines[0].State != "syscall" || stuck.Goroutines[0].Where != "cell[2]:2" || !strings.Contains(stuck.Goroutines[0].Stack, "syscall.Read") {
		t.Fatalf("stuck: %+v", stuck.Goroutines)
	}
	// The session goes on; when the read returns, the stuck code stops
	// before its next statement.
	runCell(t, s, 3, "syscall.Write(p[1], []byte{1})")
	settled(t)
	if got := value(t, runCell(t, s, 4, "after")); got != "0" {
		t.Fatalf("after = %s: the stuck cell went on", got)
	}
}

func TestInterruptedInitializerKeepsVariables(t *testing.T) {
	s := newSession(t)
	runCell(t, s, 1, "a := 5\nfunc block() int { select {} }")
	err, _ := interrupt(t, s, 2, "var a = 7\nvar b = block()\nfunc useB() int { return b }", 100*time.Millisecond)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want canceled, got %v", err)
	}
	if got := value(t, runCell(t, s, 3, "a")); got != "5" {
		t.Fatalf("a = %s", got)
	}
}

// Exported functions and variables of a cell, and the wrappers later cells
// declare for them, must not become plugin exports: a plugin links every
// earlier cell's package, and opening it would look those names up under
// its own path (the train_mlp notebook's NewMLP met this).
func TestExportedNamesAcrossCells(t *testing.T) {
	s := newSession(t)
	runCell(t, s, 1, `func Hello() string { return "hi" }`+"\nvar Count = 2")
	runCell(t, s, 2, `func Greet() string { return Hello() + "!" }`)
	runCell(t, s, 3, "func Twice() int { return Count * len(Greet()) }\nfunc Keys[K comparable, V any](m map[K]V) int { return len(m) }")
	runCell(t, s, 4, "func total() int { return Twice() + Keys(map[string]int{\"a\": 1}) }")
	if got := value(t, runCell(t, s, 5, "import \"fmt\"\nfunc again() string { return Hello() + Greet() }\nfmt.Sprint(total(), again(), Count)")); got != "7hihi!2" {
		t.Fatalf("got %q", got)
	}
}

// Unexported fields of an earlier cell's generic struct, from generic and
// plain code of later cells (through generic shadows).
func TestGenericStructFieldsAcrossCells(t *testing.T) {
	s := newSession(t)
	runCell(t, s, 1, "type elem[T any] struct {\n\tval  T\n\tnext *elem[T]\n}")
	runCell(t, s, 2, "type list[T any] struct{ head *elem[T] }\nfunc (l *list[T]) push(v T) { l.head = &elem[T]{v, l.head} }\nfunc (l *list[T]) items() []T {\n\tvar out []T\n\tfor e := l.head; e != nil; e = e.next {\n\t\tout = append(out, e.val)\n\t}\n\treturn out\n}")
	runCell(t, s, 3, "func firstInt(l *list[int]) int { return l.head.val }\nvar l list[int]\nl.push(1)\nl.push(2)\nl.head.next.val *= 10")
	if got := value(t, runCell(t, s, 4, "func both() (int, []int) { return firstInt(&l), l.items() }\nboth()")); got != "2, [2 10]" {
		t.Fatalf("got %q", got)
	}
}

// A variable of an unnamed struct type with unexported fields (the table of
// a table-driven loop), used by later cells: its type belongs to the cell
// that spelled it.
func TestUnnamedStructsAcrossCells(t *testing.T) {
	s := newSession(t)
	runCell(t, s, 1, "tests := []struct {\n\tin   string\n\twant int\n}{{\"a\", 1}, {\"bb\", 2}}\nvar cfg struct{ n int }")
	runCell(t, s, 2, "func check() (bad int) {\n\tfor _, tc := range tests {\n\t\tif len(tc.in) != tc.want {\n\t\t\tbad++\n\t\t}\n\t}\n\treturn bad\n}\nfunc first() string { return tests[0].in }")
	runCell(t, s, 3, "cfg.n = 7\ntests = append(tests, tests[1])\ntests[2].in += \"c\"\ntests[2].want = 4")
	if got := value(t, runCell(t, s, 4, "for i := range tests {\n\ttests[i].want += 0\n}\ncheck() + cfg.n*10 + len(first())*100")); got != "171" {
		t.Fatalf("got %q", got)
	}
	// Spelled again in a later cell, the struct is the same type (one
	// package in Go): literals, signatures, field access.
	runCell(t, s, 5, "tests = append(tests, struct {\n\tin   string\n\twant int\n}{\"dddd\", 4})\nfunc row(i int) struct {\n\tin   string\n\twant int\n} {\n\treturn tests[i]\n}")
	// Identical to a struct inside a type declaration of the cell, it stays
	// the cell's own (Go's test/fixedbugs/issue23017.go split into cells).
	runCell(t, s, 7, "var y struct{ n int }")
	if got := value(t, runCell(t, s, 8, "func nested() int {\n\ttype T *struct{ x struct{ n int } }\n\tx := struct{ n int }{5}\n\tvar q T = &struct{ x struct{ n int } }{x}\n\treturn q.x.n\n}\nnested()")); got != "5" {
		t.Fatalf("nested() = %s", got)
	}
	if got := value(t, runCell(t, s, 6, "func last() (int, string) {\n\tr := row(len(tests) - 1)\n\treturn check(), r.in\n}\nlast()")); got != "1, dddd" {
		t.Fatalf("got %q", got)
	}
}

// recover works in a function of an earlier cell that a defer calls (Go's
// test/recover1.go split into cells died of its runtime.Breakpoint).
func TestDeferredFunctionOfAnEarlierCellRecovers(t *testing.T) {
	s := newSession(t)
	runCell(t, s, 1, "func mustRecover(want any) {\n\tif v := recover(); v != want {\n\t\tpanic(\"recovered the wrong value\")\n\t}\n}")
	runCell(t, s, 2, "func f() (ok bool) {\n\tdefer mustRecover(3)\n\tok = true\n\tpanic(3)\n}")
	// A function value of an earlier cell is that function: deferred
	// through a variable, it recovers too.
	runCell(t, s, 3, "func h() (ok bool) {\n\tm := mustRecover\n\tdefer m(4)\n\tok = true\n\tpanic(4)\n}\nfunc seq(yield func(int) bool) { _ = yield(1) && yield(2) }")
	// A function value in a for header (range over an earlier cell's func).
	if got := value(t, runCell(t, s, 30, "func total() (n int) {\n\tfor v := range seq {\n\t\tn += v\n\t}\n\treturn n\n}\ntotal()")); got != "3" {
		t.Fatalf("total() = %s", got)
	}
	if got := value(t, runCell(t, s, 4, "func g() bool { return f() && h() }\ng()")); got != "true" {
		t.Fatalf("got %q", got)
	}
}

// A non-empty interface value made in one cell, asserted to its concrete
// type in another (each plugin has its own itab of the pair).
func TestTypeAssertionAcrossCells(t *testing.T) {
	s := newSession(t)
	runCell(t, s, 1, "type shape interface{ area() float64 }\ntype sq struct{ s float64 }\nfunc (q sq) area() float64 { return q.s * q.s }")
	runCell(t, s, 2, "var sh shape = sq{2}\nvar e any = sq{3}")
	runCell(t, s, 3, "func isSq(x shape) bool { _, ok := x.(sq); return ok }\ntype box struct{ in []shape }")
	if got := value(t, runCell(t, s, 31, "isSq(sq{1})")); got != "true" { // an evaluated call
		t.Fatalf("isSq(sq{1}) = %s", got)
	}
	if got := value(t, runCell(t, s, 32, "b := box{[]shape{sq{1}}}\nisSq(b.in[0])")); got != "true" {
		t.Fatalf("isSq(b.in[0]) = %s", got)
	}
	if got := value(t, runCell(t, s, 4, "func f() (bool, bool, bool, string) {\n\t_, ok := sh.(sq)\n\t_, ok2 := e.(sq)\n\tkind := \"other\"\n\tswitch sh.(type) {\n\tcase sq:\n\t\tkind = \"sq\"\n\t}\n\treturn ok, ok2, isSq(sh), kind\n}\nf()")); got != "true, true, true, sq" {
		t.Fatalf("got %q", got)
	}
}

// Package-level variables without an initializer are zero before any
// initializer runs (Go's test/fixedbugs/bug227.go, split into cells).
func TestZeroVariablesBeforeInitializers(t *testing.T) {
	s := newSession(t)
	runCell(t, s, 1, "var (\n\tnf      int\n\tx, y, z = f(), f(), f()\n)\n\nfunc f() int {\n\tnf++\n\treturn nf\n}")
	if got := value(t, runCell(t, s, 2, "nf*10 + z")); got != "33" {
		t.Fatalf("nf, z = %s", got)
	}
}

// Unnamed structs that mention a function's local types stay in the
// function (Go's test/fixedbugs/bug290.go and issue43619.go split into
// cells).
func TestStructsOfLocalTypes(t *testing.T) {
	s := newSession(t)
	runCell(t, s, 1, "func one(a int) int { return a }")
	if got := value(t, runCell(t, s, 2, "func f() int {\n\ttype fn func(int) int\n\ttype Y struct{ y []Y }\n\tn := 0\n\tfor _, c := range []struct {\n\t\tf fn\n\t\tx int\n\t}{{one, 3}} {\n\t\tn += c.f(c.x) + len(Y{}.y)\n\t}\n\treturn n\n}\nf()")); got != "3" {
		t.Fatalf("got %q", got)
	}
}

// A finalizer that panics ends a Go program from the runtime's goroutine;
// in a cell it is reported and the kernel goes on.
func TestFinalizerPanicIsReportedNotFatal(t *testing.T) {
	s := newSession(t)
	lateMsgs := make(chan string, 10)
	s.Late = func(msg string) { lateMsgs <- msg }
	runCell(t, s, 1, "import (\n\t\"fmt\"\n\t\"runtime\"\n)\ntype res struct {\n\tn   int\n\tpad [256]byte\n}\n"+
		"func leak() {\n\tr := &res{n: 1}\n\truntime.SetFinalizer(r, func(r *res) { panic(\"finalizer of res\") })\n}\n"+
		"func leakCleanup() {\n\tr := &res{n: 2}\n\truntime.AddCleanup(r, func(n int) { panic(fmt.Sprint(\"cleanup \", n)) }, 7)\n}\n"+
		"leak()\nleakCleanup()")
	var got []string
	for len(got) < 2 {
		select {
		case m := <-lateMsgs:
			got = append(got, m)
		default:
			runtime.GC() // until both have run: progress, not a clock
			time.Sleep(time.Millisecond)
		}
	}
	all := strings.Join(got, "\n")
	if !strings.Contains(all, "finalizer of res (in a finalizer)") || !strings.Contains(all, "cleanup 7 (in a finalizer)") {
		t.Fatalf("late messages:\n%s", all)
	}
	if v := value(t, runCell(t, s, 2, "1 + 1")); v != "2" {
		t.Fatalf("the session after the finalizers: %s", v)
	}
	var seen []string // late messages, in any order
	wantLate := func(what string) {
		t.Helper()
		for {
			for _, m := range seen {
				if strings.Contains(m, what) {
					return
				}
			}
			select {
			case m := <-lateMsgs:
				seen = append(seen, m)
			default:
				runtime.GC() // until it has run: progress, not a clock
				time.Sleep(time.Millisecond)
			}
		}
	}
	// os.Exit in a finalizer unwinds it: it must not park the runtime's
	// finalizer goroutine, which every later finalizer needs (the
	// runtime's own too).
	runCell(t, s, 3, "import \"os\"\nfunc exitLater() {\n\tr := &res{n: 3}\n\truntime.SetFinalizer(r, func(r *res) { os.Exit(3) })\n}\nexitLater()")
	wantLate("os.Exit(3)")
	// Finalizers of a named func type, and with a result (wrapped through
	// reflect), still run and still have their panics caught.
	runCell(t, s, 4, "type fin func(*res)\nfunc later() {\n\tvar f fin = func(r *res) { panic(\"named finalizer\") }\n\truntime.SetFinalizer(&res{n: 4}, f)\n"+
		"\truntime.SetFinalizer(&res{n: 5}, func(r *res) int { panic(\"finalizer with a result\") })\n}\nlater()")
	wantLate("named finalizer (in a finalizer)")
	wantLate("finalizer with a result (in a finalizer)")
}
