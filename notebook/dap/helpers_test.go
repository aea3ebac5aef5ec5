package dap

import (
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/traefik/yaegi/interp"
	"github.com/traefik/yaegi/stdlib"
)

// patience bounds every wait for the debugged program (an event, its end):
// a hang guard far above what a busy machine needs, never a budget.
const patience = 5 * time.Minute

// prompt is what "at once" means for what an interrupt must end: the
// alternative (a thread stopped at a breakpoint) is forever, so the bound
// proves the point however busy the machine.
const prompt = 2 * time.Minute

// fakeHost is a session with fixed variables.
type fakeHost struct {
	mu       sync.Mutex
	vars     []Var
	attached []bool
}

func (h *fakeHost) Attached(on bool) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.attached = append(h.attached, on)
	if on {
		return "attached note"
	}
	return "detached note"
}

func (h *fakeHost) Globals(context.Context) ([]Var, error) { return h.vars, nil }

func (h *fakeHost) Rich(v reflect.Value) map[string]any {
	return map[string]any{"text/html": "<b>rich</b>"}
}

// session is an adapter with an interpreter and a client.
type session struct {
	t      *testing.T
	a      *Adapter
	it     *interp.Interpreter
	host   *fakeHost
	seq    int
	events chan map[string]any
}

func newSession(t *testing.T) *session {
	t.Helper()
	host := &fakeHost{}
	a := New(Options{Host: host, Dir: t.TempDir()})
	it := interp.New(interp.Options{})
	if err := it.Use(stdlib.Symbols); err != nil {
		t.Fatal(err)
	}
	s := &session{t: t, a: a, it: it, host: host, events: make(chan map[string]any, 1000)}
	a.SetEvents(func(ev []byte) {
		var m map[string]any
		if err := json.Unmarshal(ev, &m); err != nil {
			t.Errorf("bad event %s: %v", ev, err)
		}
		s.events <- m
	})
	return s
}

// req sends a request and returns the response.
func (s *session) req(command string, args any) map[string]any {
	s.t.Helper()
	s.seq++
	raw, _ := json.Marshal(map[string]any{"type": "request", "seq": s.seq, "command": command, "arguments": args})
	resp, events := s.a.Handle(context.Background(), raw)
	var m map[string]any
	if err := json.Unmarshal(resp, &m); err != nil {
		s.t.Fatalf("%s: bad response %s: %v", command, resp, err)
	}
	if m["type"] != "response" || m["command"] != command || m["request_seq"] != float64(s.seq) {
		s.t.Fatalf("%s: response %v", command, m)
	}
	for _, e := range events {
		var em map[string]any
		_ = json.Unmarshal(e, &em)
		s.events <- em
	}
	return m
}

// ok sends a request that must succeed and returns its body.
func (s *session) ok(command string, args any) map[string]any {
	s.t.Helper()
	m := s.req(command, args)
	if m["success"] != true {
		s.t.Fatalf("%s failed: %v", command, m["message"])
	}
	b, _ := m["body"].(map[string]any)
	return b
}

// waitEvent waits for the next event named name (others are dropped).
func (s *session) waitEvent(name string) map[string]any {
	s.t.Helper()
	deadline := time.After(patience)
	for {
		select {
		case e := <-s.events:
			if e["event"] == name {
				b, _ := e["body"].(map[string]any)
				return b
			}
		case <-deadline:
			s.t.Fatalf("no %s event within %v", name, patience)
		}
	}
}

// compile compiles code of cell n as the engine does (a file for
// declarations, a block for statements) and registers it.
func (s *session) compile(n int, code string, stmts bool) *interp.Program {
	s.t.Helper()
	var node ast.Node
	if stmts {
		f, err := parser.ParseFile(s.it.FileSet(), "_.go", fmt.Sprintf("package main\nfunc main() {\n//line cell[%d]/_.go:1:1\n%s\n}\n", n, code), 0)
		if err != nil {
			s.t.Fatal(err)
		}
		node = f.Decls[0].(*ast.FuncDecl).Body
	} else {
		f, err := parser.ParseFile(s.it.FileSet(), "_.go", fmt.Sprintf("package main\n//line cell[%d]/_.go:1:1\n%s\n", n, code), 0)
		if err != nil {
			s.t.Fatal(err)
		}
		node = f
	}
	p, err := s.it.CompileAST(node)
	if err != nil {
		s.t.Fatalf("compiling cell %d: %v", n, err)
	}
	s.a.SetCellCode(n, code)
	s.a.AddProgram(p, n)
	return p
}

// declare compiles and runs declarations of cell n (not under the debugger).
func (s *session) declare(n int, code string) {
	s.t.Helper()
	p := s.compile(n, code, false)
	if _, err := s.it.Execute(p); err != nil {
		s.t.Fatal(err)
	}
}

// start runs statements of cell n under the debugger; the returned channel
// gets Run's error.
func (s *session) start(ctx context.Context, n int, code string) <-chan error {
	s.t.Helper()
	if raceEnabled {
		// yaegi v0.16.1's debugger keeps a thread's mode and running flag
		// in plain fields that the debugged goroutines and the debugger's
		// API write without synchronization (and clears the interpreter's
		// debugger from its own goroutine): races inside the dependency,
		// as TestInterrupt in package notebook notes for ExecuteWithContext.
		s.t.Skip("yaegi's debugger races with the goroutines it debugs")
	}

	p := s.compile(n, code, true)
	done := make(chan error, 1)
	go func() { done <- s.a.Run(ctx, s.it, p) }()
	return done
}

func (s *session) attach() {
	s.t.Helper()
	s.ok("initialize", map[string]any{"clientID": "test", "adapterID": "goaccel", "linesStartAt1": true, "pathFormat": "path"})
	s.ok("attach", map[string]any{})
}

func (s *session) breakAt(code string, lines ...int) {
	s.t.Helper()
	path := s.ok("dumpCell", map[string]any{"code": code})["sourcePath"].(string)
	var bps []any
	for _, l := range lines {
		bps = append(bps, map[string]any{"line": l})
	}
	s.ok("setBreakpoints", map[string]any{"source": map[string]any{"path": path}, "breakpoints": bps, "sourceModified": false})
	s.ok("configurationDone", map[string]any{})
}

func wait(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(patience):
		t.Fatalf("the cell did not end within %v", patience)
	}
	return nil
}

// frames returns the stack of thread id as (name, line, source name).
func (s *session) frames(id int) []map[string]any {
	s.t.Helper()
	b := s.ok("stackTrace", map[string]any{"threadId": id})
	var out []map[string]any
	for _, f := range b["stackFrames"].([]any) {
		out = append(out, f.(map[string]any))
	}
	return out
}

// scope returns the variables of scope name of frame id as name → value.
func (s *session) scope(frameID int, name string) map[string]map[string]any {
	s.t.Helper()
	for _, sc := range s.ok("scopes", map[string]any{"frameId": frameID})["scopes"].([]any) {
		sc := sc.(map[string]any)
		if sc["name"] == name {
			return s.vars(int(sc["variablesReference"].(float64)))
		}
	}
	s.t.Fatalf("no scope %s", name)
	return nil
}

func (s *session) vars(ref int) map[string]map[string]any {
	s.t.Helper()
	out := map[string]map[string]any{}
	for _, v := range s.ok("variables", map[string]any{"variablesReference": ref})["variables"].([]any) {
		v := v.(map[string]any)
		out[v["name"].(string)] = v
	}
	return out
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
