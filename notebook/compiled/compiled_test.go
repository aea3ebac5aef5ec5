package compiled

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

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
	_, err = s.Run(context.Background(), "import \"time\"\ngo func() { panic(\"in goroutine\") }()\ntime.Sleep(time.Second)", 3, nil)
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
