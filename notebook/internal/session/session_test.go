package session

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/goaccel/goaccel/frontend"
)

func TestLogKeepsTheLatestDeclarationOfAName(t *testing.T) {
	l := NewLog()
	l.AddImport(Declaration{Kind: KindImport, Name: "fmt", Path: "fmt"})
	l.AddImport(Declaration{Kind: KindImport, Name: "_", Path: "image/png"})
	l.AddImport(Declaration{Kind: KindImport, Name: "_", Path: "image/gif"})
	l.Add(Declaration{Kind: KindFunc, Name: "f", Results: 1}, Declaration{Kind: KindVar, Name: "x", Names: []string{"x", "y"}})
	l.Add(Declaration{Kind: KindMethod, Name: "T.f", Results: 2}, Declaration{Kind: KindType, Name: "f"})

	var got []string
	for _, d := range l.Declarations() {
		got = append(got, string(d.Kind)+" "+d.Name)
	}
	want := []string{"import fmt", "import _", "import _", "var x", "method T.f", "type f"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("log: %v, want %v", got, want)
	}
	if p, ok := l.Imported("fmt"); !ok || p != "fmt" || l.ImportPath("_") != "" {
		t.Errorf("imports: %v", l.Imports())
	}
	if !l.HasImport("_", "image/gif") || !l.HasName("y") || l.HasName("T.f") || l.FuncResults("f") != -1 {
		t.Error("lookups disagree with the log")
	}
	if n := l.MethodNames(); !n["f"] || len(n) != 1 {
		t.Errorf("method names: %v", n)
	}
	var counts []int
	l.MethodResults("f", func(n int) bool { counts = append(counts, n); return true })
	if !reflect.DeepEqual(counts, []int{2}) {
		t.Errorf("method results: %v", counts)
	}
	l.Add(Declaration{Kind: KindVar, Name: "_gxv"})
	if v := l.VarNames(); !reflect.DeepEqual(v, []string{"x", "y"}) {
		t.Errorf("variables: %v", v)
	}
	l.Reset()
	if len(l.Declarations()) != 0 || len(l.Imports()) != 0 {
		t.Error("Reset left declarations")
	}
}

func TestCellStoppedOnlyWhileRunning(t *testing.T) {
	c := NewCell(context.Background(), nil, false, 1)
	c.Stop(&frontend.Error{Name: "RecursionError"})
	select {
	case <-c.Stopped:
	case <-time.After(time.Minute):
		t.Fatal("Stopped did not close when the running cell was stopped")
	}
	if c.Ctx.Err() == nil || c.StopError().Name != "RecursionError" {
		t.Errorf("stopped cell: ctx %v, error %v", c.Ctx.Err(), c.StopError())
	}
	c.End()

	done := NewCell(context.Background(), nil, false, 2)
	done.End()
	if done.Running() || done.Ctx.Err() == nil || done.StopError() != nil {
		t.Error("an ended cell is running, or its context lives on")
	}
	select {
	case <-done.Stopped:
		t.Error("Stopped closed for a cell that simply ended")
	case <-time.After(50 * time.Millisecond):
	}
	if _, err := done.Ask("?", false); err == nil {
		t.Error("a cell that does not allow stdin asked for input")
	}
}

func TestCurrentCallsOnStart(t *testing.T) {
	var cur Current
	var seen []int
	cur.OnStart(func(c *Cell) { seen = append(seen, c.Count) })
	if cur.Cell() != nil {
		t.Error("a cell before the first")
	}
	c := &Cell{Count: 7}
	cur.Start(c)
	if cur.Cell() != c || !reflect.DeepEqual(seen, []int{7}) {
		t.Errorf("current %v, started %v", cur.Cell(), seen)
	}
}
