package notebook

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook/fdcapture"
)

// patience bounds every wait for a cell (its build included: a cold build
// of a package for plugins takes 40 s on a busy machine) and for what a cell
// does: a hang guard, never a budget.
const patience = 5 * time.Minute

// prompt is what "at once" means for what an interrupt or a failure must
// end: the alternative (a cell that blocks forever, a sleep of an hour) is
// much longer, so the bound proves the point however busy the machine.
const prompt = 2 * time.Minute

// waitFor polls cond until it holds; it fails the test only when cond does
// not hold within patience.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, patience)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fakeIO is an in-memory CellIO.
type fakeIO struct {
	mu       sync.Mutex
	streams  []stream
	displays []frontend.MIMEBundle
	inputs   []string // answers, in order
	prompts  []string
	password []bool
	onStream func(name, text string)
}

type stream struct{ name, text string }

func (f *fakeIO) Stream(name, text string) {
	f.mu.Lock()
	f.streams = append(f.streams, stream{name, text})
	cb := f.onStream
	f.mu.Unlock()
	if cb != nil {
		cb(name, text)
	}
}
func (f *fakeIO) Display(d frontend.MIMEBundle, _ map[string]any, _ string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.displays = append(f.displays, d)
}
func (f *fakeIO) UpdateDisplay(d frontend.MIMEBundle, _ map[string]any, _ string) {}
func (f *fakeIO) ClearOutput(bool)                                                {}
func (f *fakeIO) Input(ctx context.Context, prompt string, password bool) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.prompts = append(f.prompts, prompt)
	f.password = append(f.password, password)
	if len(f.inputs) == 0 {
		return "", context.Canceled
	}
	s := f.inputs[0]
	f.inputs = f.inputs[1:]
	return s, nil
}

func (f *fakeIO) text(name string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b strings.Builder
	for _, s := range f.streams {
		if s.name == name {
			b.WriteString(s.text)
		}
	}
	return b.String()
}

// newEngine returns an engine capturing fds 1 and 2 (where compiled cells
// write) for the length of the test.
func newEngine(t testing.TB) *Engine {
	t.Helper()
	return newEngineWith(t, Options{})
}

// newEngineWith is newEngine with options.
func newEngineWith(t testing.TB, opts Options) *Engine {
	t.Helper()
	c, err := fdcapture.Redirect()
	if err != nil {
		t.Fatal(err)
	}
	opts.Version, opts.Capture = "test", c
	e, err := New(opts)
	if err != nil {
		_ = c.Restore()
		t.Fatal(err)
	}
	if e.compErr != nil {
		// These tests are about compiled cells; a silent fall-back to the
		// interpreter would test the wrong engine.
		e.Close()
		_ = c.Restore()
		t.Fatalf("compiled cells unavailable: %v", e.compErr)
	}
	t.Cleanup(func() {
		e.Close()
		_ = c.Restore()
	})
	return e
}

var counter struct {
	sync.Mutex
	n int
}

// run executes code and returns the reply and the cell's output.
func run(t testing.TB, e *Engine, code string) (frontend.ExecuteReply, *fakeIO) {
	t.Helper()
	io := &fakeIO{}
	return runIO(t, e, code, io), io
}

func runIO(t testing.TB, e *Engine, code string, io *fakeIO) frontend.ExecuteReply {
	t.Helper()
	counter.Lock()
	counter.n++
	n := counter.n
	counter.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	return e.Execute(ctx, frontend.ExecuteRequest{Code: code, ExecutionCount: n, AllowStdin: true}, io)
}

// mustRun fails the test when the cell fails.
func mustRun(t testing.TB, e *Engine, code string) (frontend.ExecuteReply, *fakeIO) {
	t.Helper()
	r, io := run(t, e, code)
	if r.Err != nil {
		t.Fatalf("cell failed:\n%s\n---\n%v\nstderr: %s", code, r.Err, io.text("stderr"))
	}
	return r, io
}

func resultText(r frontend.ExecuteReply) string {
	if r.Result == nil {
		return ""
	}
	s, _ := r.Result["text/plain"].(string)
	return s
}

func regexpMatch(pattern, s string) bool {
	return regexp.MustCompile(pattern).MatchString(s)
}
