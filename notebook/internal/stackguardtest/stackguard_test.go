// Package stackguardtest tests, through the engine, that runaway recursion
// in a cell ends the cell with StackOverflow instead of killing the
// process. It runs in a test binary of its own: it grows a goroutine stack
// to the guard's limit, which a process that ran many other engine tests
// does far more slowly (see the closing note of issue 8).
package stackguardtest

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook"
	"github.com/goaccel/goaccel/notebook/fdcapture"
)

// cellIO records a cell's output.
type cellIO struct {
	mu  sync.Mutex
	out strings.Builder
}

func (c *cellIO) Stream(_, text string)                                     { c.mu.Lock(); c.out.WriteString(text); c.mu.Unlock() }
func (c *cellIO) Display(frontend.MIMEBundle, map[string]any, string)       {}
func (c *cellIO) UpdateDisplay(frontend.MIMEBundle, map[string]any, string) {}
func (c *cellIO) ClearOutput(bool)                                          {}
func (c *cellIO) Input(context.Context, string, bool) (string, error)       { return "", context.Canceled }

func newEngine(t *testing.T) *notebook.Engine {
	t.Helper()
	c, err := fdcapture.Redirect()
	if err != nil {
		t.Fatal(err)
	}
	e, err := notebook.New(notebook.Options{Version: "test", Capture: c})
	if err != nil {
		_ = c.Restore()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.Close()
		_ = c.Restore()
	})
	return e
}

func run(e *notebook.Engine, code string) frontend.ExecuteReply {
	return e.Execute(context.Background(), frontend.ExecuteRequest{Code: code}, &cellIO{})
}

// TestEndlessRecursionIsAnError: a stack overflow would kill the kernel, so
// the guard must stop endless recursion first, and the session goes on.
func TestEndlessRecursionIsAnError(t *testing.T) {
	e := newEngine(t)
	if r := run(e, "kept := 1"); r.Err != nil {
		t.Fatal(r.Err)
	}
	rep := run(e, "func down(n int) int { return down(n+1) + 1 }\ndown(0)")
	if rep.Err == nil || rep.Err.Name != "StackOverflow" || !strings.Contains(rep.Err.Value, "stack exceeds") {
		t.Fatalf("endless recursion: %+v", rep.Err)
	}
	rep = run(e, "func fib(n int) int { if n < 2 { return n }; return fib(n-1) + fib(n-2) }\nfib(15) + kept")
	if rep.Err != nil || rep.Result["text/plain"] != "611" {
		t.Fatalf("fib after the guard fired: %v %v", rep.Err, rep.Result)
	}
}

func TestEndlessRecursionThroughAClosure(t *testing.T) {
	e := newEngine(t)
	rep := run(e, "var down func(int) int\ndown = func(n int) int { return down(n+1) + 1 }\ndown(0)")
	if rep.Err == nil || rep.Err.Name != "StackOverflow" {
		t.Fatalf("endless recursion through a closure: %+v", rep.Err)
	}
}
