package launch

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/notebook/build"
	"github.com/goaccel/goaccel/notebook/check"
	"github.com/goaccel/goaccel/notebook/compiled"
)

// compiledCells is a compiled session as the compiled runner holds it
// (Compiled), without the engine around it.
type compiledCells struct {
	s *compiled.Session
	b *build.Builder
	n int
}

func newCompiledCells(t *testing.T) *compiledCells {
	t.Helper()
	b, err := build.New(context.Background(), build.Options{})
	if err != nil {
		t.Fatalf("compiled cells unavailable: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return &compiledCells{s: compiled.New(compiled.Options{Builder: b}), b: b}
}

func (c *compiledCells) Session() *compiled.Session    { return c.s }
func (c *compiledCells) Builder() *build.Builder       { return c.b }
func (c *compiledCells) AutoImport(name string) string { return "" }

// mustRun runs src as the next cell and fails the test when it fails.
func (c *compiledCells) mustRun(t *testing.T, src string) {
	t.Helper()
	c.n++
	if _, err := c.s.Run(context.Background(), src, c.n, nil); err != nil {
		var ce *check.Error
		if errors.As(err, &ce) {
			t.Fatalf("cell failed:\n%s\n---\n%v", src, strings.Join(ce.Lines(func(int) string { return src }), "\n"))
		}
		t.Fatalf("cell failed:\n%s\n---\n%v", src, err)
	}
}

// TestReplayClosure: a launch carries what the function reaches — the
// declarations it uses, transitively, every method of the types among them,
// the variables as `var x T` — and nothing else.
func TestReplayClosure(t *testing.T) {
	cc := newCompiledCells(t)
	cc.mustRun(t, `import (
	"fmt"
	tm "time"
)

type Unit int

const (
	A Unit = iota
	B
	C
)

type Model struct{ W []float64 }

func (m *Model) String() string { return fmt.Sprint(len(m.W)) }

type Unrelated struct{ ch chan int }

func helper(m *Model) float64 { return float64(len(m.W)) * scale }

var scale = 2.0
model := &Model{W: []float64{1}}
other := Unrelated{}
timeout := 3 * tm.Second
_ = other`)
	cc.mustRun(t, `const late = 'x'

func train(d tm.Duration) float64 {
	_ = timeout
	_ = late
	return helper(model) + float64(B)
}`)
	w := newReplayWorld(cc.s.Checker(), nil)
	items := w.closure("train")
	var keys []string
	for k := range items {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if got, want := strings.Join(keys, " "), "B Model Model.String Unit helper late model scale timeout train"; got != want {
		t.Errorf("closure of train:\n got %s\nwant %s", got, want)
	}
	names := newReplayNames(w, items)
	decls := strings.Join(replayDecls(items, names), "\n")
	wantIn(t, "declarations", decls, "const B Unit = 1", "const late = 'x'", "func (m *Model) String()", "//line cell[")
	vars, err := New(Options{Compiled: cc}).carryVars("train", items, names)
	if err != nil {
		t.Fatal(err)
	}
	var vs []string
	for _, v := range vars {
		vs = append(vs, v.Name+" "+v.Type+" "+string(v.Value))
	}
	if got, want := strings.Join(vs, "; "), `model *Model {"W":[1]}; scale float64 2; timeout tm.Duration 3000000000`; got != want {
		t.Errorf("carried variables:\n got %s\nwant %s", got, want)
	}
	imports := replayImports(w, names, replayDecls(items, names))
	if got, want := strings.Join(imports, "; "), `import fmt "fmt"; import tm "time"`; got != want {
		t.Errorf("imports:\n got %s\nwant %s", got, want)
	}
	// The worker's cells compile.
	p := launchPayload{Func: "train", Imports: imports, Decls: replayDecls(items, names), Vars: vars,
		Params: []string{"tm.Duration"}, Results: []string{"float64"}}
	opts := compiled.Options{Builder: cc.b, AutoImport: cc.AutoImport}
	if err := compiled.Prebuild(context.Background(), opts, planWorker(p).cells); err != nil {
		t.Errorf("the worker's cells do not build: %v\n%s", err, strings.Join(planWorker(p).cells, "\n---\n"))
	}
}

func wantIn(t *testing.T, what, text string, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(text, s) {
			t.Errorf("%s lacks %q:\n%s", what, s, text)
		}
	}
}
