package safepoint

import (
	"strings"
	"testing"
)

func rewrite(t *testing.T, src string) (string, bool) {
	t.Helper()
	out, changed, err := Rewrite("lib.go", []byte(src), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if !changed {
		return src, false
	}
	// Every line keeps its number and its text; only insertions.
	in, got := strings.Split(src, "\n"), strings.Split(string(out), "\n")
	if len(in) != len(got) {
		t.Fatalf("%d lines became %d:\n%s", len(in), len(got), out)
	}
	for i := range in {
		stripped := strings.ReplaceAll(got[i], checkName+".Check();", "")
		stripped = strings.Replace(stripped, `; import `+checkName+` "`+CheckImport+`"`, "", 1)
		if stripped != in[i] {
			t.Fatalf("line %d changed: %q became %q", i+1, in[i], got[i])
		}
	}
	return string(out), true
}

func TestChecksAtLoopIterations(t *testing.T) {
	src := `package lib // import "example.com/lib"

import "fmt"

var table = func() []int {
	var t []int
	for i := 0; i < 3; i++ { t = append(t, i) }
	return t
}()

func Sum(xs []int) (s int) {
	for _, x := range xs {
		s += x
	}
	for i := range 3 {
		go func() {
			for {
				fmt.Println(i)
			}
		}()
	}
	return
}
`
	out, changed := rewrite(t, src)
	if !changed {
		t.Fatal("not rewritten")
	}
	if n := strings.Count(out, checkName+".Check()"); n != 4 {
		t.Errorf("%d checks, want 4:\n%s", n, out)
	}
	if !strings.HasPrefix(out, `package lib; import `+checkName+` "`+CheckImport+`" // import "example.com/lib"`) {
		t.Errorf("import not on the package clause's line:\n%s", out)
	}
}

func TestNoLoopsNoChange(t *testing.T) {
	if _, changed := rewrite(t, "package lib\n\nfunc F() int { return 1 }\n"); changed {
		t.Error("a file without loops was rewritten")
	}
}

func TestCgoFilesAreLeftAlone(t *testing.T) {
	src := "package lib\n\n// int two(void) { return 2; }\nimport \"C\"\n\nfunc F() { for { C.two() } }\n"
	if _, changed := rewrite(t, src); changed {
		t.Error("a cgo file was rewritten")
	}
}

func TestLocksHeldAcrossLoops(t *testing.T) {
	src := `package lib

import "sync"

type S struct {
	mu sync.Mutex
	rw sync.RWMutex
	n  int
}

func (s *S) Held() {
	s.mu.Lock()
	for i := 0; i < 10; i++ { s.n++ }
	s.mu.Unlock()
}

func (s *S) HeldLater() {
	for i := 0; i < 10; i++ { s.n++ }
	if s.n > 3 {
		s.rw.RLock()
		s.n--
		s.rw.RUnlock()
	}
}

func (s *S) Deferred() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 0; i < 10; i++ { s.n++ }
}

func (s *S) ReadDeferred() {
	s.rw.RLock()
	defer s.rw.RUnlock()
	for i := 0; i < 10; i++ { s.n++ }
}

func (s *S) WrongUnlock() {
	s.rw.RLock()
	defer s.rw.Unlock()
	for i := 0; i < 10; i++ { s.n++ }
}

func (s *S) Closure() {
	f := func() {
		s.mu.Lock()
		for i := 0; i < 10; i++ { s.n++ }
		s.mu.Unlock()
	}
	for i := 0; i < 2; i++ { f() }
}

//go:nosplit
func Nosplit(xs []int) (s int) {
	for _, x := range xs { s += x }
	return
}
`
	out, _ := rewrite(t, src)
	funcs := strings.Split(out, "\nfunc ")
	want := map[string]int{"(s *S) Held()": 0, "(s *S) HeldLater()": 0, "(s *S) Deferred()": 1,
		"(s *S) ReadDeferred()": 1, "(s *S) WrongUnlock()": 0, "(s *S) Closure()": 1, "Nosplit(": 0}
	for _, f := range funcs[1:] {
		for name, n := range want {
			if strings.HasPrefix(f, name) {
				if got := strings.Count(f, checkName+".Check()"); got != n {
					t.Errorf("func %s: %d checks, want %d:\n%s", name, got, n, f)
				}
				delete(want, name)
			}
		}
	}
	if len(want) != 0 {
		t.Errorf("functions not found: %v", want)
	}
}

func TestSyntaxErrorsAreReported(t *testing.T) {
	if _, _, err := Rewrite("bad.go", []byte("package lib\nfunc {"), nil, false); err == nil || !strings.Contains(err.Error(), "bad.go") {
		t.Errorf("err = %v, want one naming bad.go", err)
	}
}

func TestOnlyTheFunctionsAsked(t *testing.T) {
	src := `package train

type Loop[T any] struct{ n int }

func (l *Loop[T]) Run() { for { l.n++ } }

func (l *Loop[T]) step() { for i := 0; i < 3; i++ { l.n++ } }

func Helper() { for { } }

var v = func() int { for { return 1 } }()
`
	var asked []string
	out, changed, err := Rewrite("loop.go", []byte(src), func(name string) bool {
		asked = append(asked, name)
		return name == "Loop.Run"
	}, false)
	if err != nil || !changed {
		t.Fatalf("changed %v, err %v", changed, err)
	}
	if n := strings.Count(string(out), checkName+".Check()"); n != 1 || !strings.Contains(string(out), "func (l *Loop[T]) Run() { for {"+checkName+".Check();") {
		t.Errorf("%d checks, want one in Loop.Run:\n%s", n, out)
	}
	if got := strings.Join(asked, " "); got != "init Loop.Run Loop.step Helper init" {
		t.Errorf("asked about %q", got)
	}
}

// Strong checks (loops that iterate once per step) call gxrt.Stmt, which
// also ends a goroutine that outlived its interrupt.
func TestRewriteStrong(t *testing.T) {
	src := "package lib\n\nfunc Steps(n int) {\n\tfor i := 0; i < n; i++ {\n\t\tstep()\n\t}\n}\n\nfunc step() {}\n"
	out, changed, err := Rewrite("steps.go", []byte(src), nil, true)
	if err != nil || !changed {
		t.Fatalf("changed %v, err %v", changed, err)
	}
	if !strings.Contains(string(out), "for i := 0; i < n; i++ {"+checkName+".Stmt();") || strings.Contains(string(out), ".Check()") {
		t.Errorf("strong checks:\n%s", out)
	}
	if strings.Count(string(out), "\n") != strings.Count(src, "\n") {
		t.Errorf("lines changed:\n%s", out)
	}
}
