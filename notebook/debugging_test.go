package notebook

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/frontend"
)

// dapClient drives the engine's debugger as JupyterLab would.
type dapClient struct {
	t      *testing.T
	e      *Engine
	seq    int
	events chan map[string]any
}

func newDAP(t *testing.T, e *Engine) *dapClient {
	c := &dapClient{t: t, e: e, events: make(chan map[string]any, 1000)}
	e.SetDebugEvents(func(ev json.RawMessage) {
		var m map[string]any
		if err := json.Unmarshal(ev, &m); err != nil {
			t.Errorf("event %s: %v", ev, err)
		}
		c.events <- m
	})
	return c
}

func (c *dapClient) req(command string, args any) map[string]any {
	c.t.Helper()
	c.seq++
	raw, _ := json.Marshal(map[string]any{"type": "request", "seq": c.seq, "command": command, "arguments": args})
	resp, events := c.e.HandleDebug(context.Background(), raw)
	for _, ev := range events {
		var m map[string]any
		_ = json.Unmarshal(ev, &m)
		c.events <- m
	}
	var m map[string]any
	if err := json.Unmarshal(resp, &m); err != nil {
		c.t.Fatalf("%s: %s: %v", command, resp, err)
	}
	if m["success"] != true {
		c.t.Fatalf("%s failed: %v", command, m["message"])
	}
	b, _ := m["body"].(map[string]any)
	return b
}

func (c *dapClient) attach() {
	c.req("initialize", map[string]any{"clientID": "test", "adapterID": "goaccel", "linesStartAt1": true, "pathFormat": "path"})
	c.req("attach", map[string]any{})
}

func (c *dapClient) breakAt(code string, lines ...int) {
	c.t.Helper()
	path := c.req("dumpCell", map[string]any{"code": code})["sourcePath"].(string)
	var bps []any
	for _, l := range lines {
		bps = append(bps, map[string]any{"line": l})
	}
	c.req("setBreakpoints", map[string]any{"source": map[string]any{"path": path}, "breakpoints": bps})
	c.req("configurationDone", nil)
}

func (c *dapClient) waitEvent(name string) map[string]any {
	c.t.Helper()
	deadline := time.After(patience)
	for {
		select {
		case e := <-c.events:
			if e["event"] == name {
				b, _ := e["body"].(map[string]any)
				return b
			}
		case <-deadline:
			c.t.Fatalf("no %s event within %v", name, patience)
		}
	}
}

// top returns the stopped thread's top frame and its id.
func (c *dapClient) top() (map[string]any, int) {
	c.t.Helper()
	f := c.req("stackTrace", map[string]any{"threadId": 1})["stackFrames"].([]any)[0].(map[string]any)
	return f, int(f["id"].(float64))
}

// vars returns scope name of frame id, or the inspectVariables list (id 0).
func (c *dapClient) vars(id int, name string) map[string]map[string]any {
	c.t.Helper()
	var list []any
	if id == 0 {
		list = c.req("inspectVariables", nil)["variables"].([]any)
	} else {
		for _, s := range c.req("scopes", map[string]any{"frameId": id})["scopes"].([]any) {
			if s := s.(map[string]any); s["name"] == name {
				list = c.req("variables", map[string]any{"variablesReference": s["variablesReference"]})["variables"].([]any)
			}
		}
	}
	out := map[string]map[string]any{}
	for _, v := range list {
		v := v.(map[string]any)
		out[v["name"].(string)] = v
	}
	return out
}

// start runs a cell in the background; its reply comes on the channel.
func start(t *testing.T, e *Engine, code string) (<-chan frontend.ExecuteReply, *fakeIO, context.CancelFunc) {
	t.Helper()
	if raceEnabled {
		t.Skip("yaegi's debugger races with the goroutines it debugs (see package dap's tests)")
	}
	counter.Lock()
	counter.n++
	n := counter.n
	counter.Unlock()
	io := &fakeIO{}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	done := make(chan frontend.ExecuteReply, 1)
	go func() { done <- e.Execute(ctx, frontend.ExecuteRequest{Code: code, ExecutionCount: n}, io) }()
	return done, io, cancel
}

func reply(t *testing.T, done <-chan frontend.ExecuteReply) frontend.ExecuteReply {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(patience):
		t.Fatal("the cell did not end")
	}
	return frontend.ExecuteReply{}
}

// A compiled session: the variable explorer without a breakpoint, then a
// breakpoint in a function of a compiled cell stops the cell that calls it
// (the session carried into the interpreter), and detaching carries what
// the interpreted cells did back to compiled cells.
func TestDebuggingACompiledSession(t *testing.T) {
	e := newEngine(t)
	if e.compiled == nil {
		t.Fatalf("compiled cells are unavailable here: %v", e.compErr)
	}
	c := newDAP(t, e)
	decl := "type P struct {\n\tX    int\n\tname string\n}\n\nfunc add(a, b int) int {\n\tc := a + b\n\treturn c\n}\n\nvar p = P{X: 1, name: \"a\"}\nn := 41"
	if r := runIO(t, e, decl, &fakeIO{}); r.Err != nil {
		t.Fatal(r.Err)
	}
	vars := c.vars(0, "")
	if vars["n"]["value"] != "41" || vars["n"]["type"] != "int" || vars["p"]["value"] != `{X: 1, name: "a"}` || vars["p"]["type"] != "P" {
		t.Errorf("variable explorer of the compiled session: %v", vars)
	}

	c.attach()
	c.breakAt(decl, 7)
	done, io, cancel := start(t, e, "m := add(n, 1)")
	defer cancel()
	if st := c.waitEvent("stopped"); st["reason"] != "breakpoint" {
		t.Fatalf("stopped: %v", st)
	}
	f, id := c.top()
	if f["name"] != "add" || f["line"] != 7.0 || f["source"].(map[string]any)["path"] != e.dbg.PathOf(decl) {
		t.Errorf("top frame: %v", f)
	}
	if l := c.vars(id, "Locals"); l["a"]["value"] != "41" || l["b"]["value"] != "1" {
		t.Errorf("locals: %v", l)
	}
	if g := c.vars(id, "Globals"); g["n"]["value"] != "41" || g["p"]["type"] != "P" || g["p"]["value"] != `{X: 1, name: "a"}` {
		t.Errorf("globals: %v", g)
	}
	if r := c.req("evaluate", map[string]any{"expression": "a + b", "frameId": id}); r["result"] != "42" {
		t.Errorf("evaluate: %v", r)
	}
	c.req("continue", map[string]any{"threadId": 1})
	if r := reply(t, done); r.Err != nil {
		t.Fatal(r.Err)
	}
	if s := io.text("stderr"); !strings.Contains(s, "cells now run on the interpreter") {
		t.Errorf("no note about interpreting: %q", s)
	}
	mustRun(t, e, "p.X += m\nq := []P{p}")
	c.req("disconnect", map[string]any{"restart": false, "terminateDebuggee": false})

	r, io2 := mustRun(t, e, "fmt.Println(p.X, m, add(1, 2), q[0].name)")
	if out := io2.text("stdout"); out != "43 42 3 a\n" {
		t.Errorf("after detaching: %q (stderr %q)", out, io2.text("stderr"))
	}
	if s := io2.text("stderr"); !strings.Contains(s, "cells are compiled again") || strings.Contains(s, "not carried") {
		t.Errorf("note on detaching: %q", s)
	}
	_ = r
	if e.compiled.Session().Checker().Lookup("q") == nil {
		t.Error("q is not a compiled session variable")
	}
}

// An interpreted session: interrupt, a panic and copyToGlobals while
// stopped leave the session healthy.
func TestDebuggingInterpretedCells(t *testing.T) {
	e, err := New(Options{Version: "test", Interpret: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c := newDAP(t, e)
	c.attach()
	loop := "total := 0\nfor i := 0; i < 5; i++ {\n\ttotal += i\n}\ntotal"
	c.breakAt(loop, 3)
	done, _, cancel := start(t, e, loop)
	c.waitEvent("stopped")
	_, id := c.top()
	if g := c.vars(id, "Globals"); g["i"]["value"] != "0" || g["total"]["value"] != "0" {
		t.Errorf("globals at the first iteration: %v", g)
	}
	cancel()
	if r := reply(t, done); r.Err == nil || r.Err.Name != "Interrupted" {
		t.Fatalf("interrupted while stopped: %+v", r.Err)
	}

	// A cell that panics after a stop.
	cell := "var m map[string]int\nk := \"x\"\nm[k] = 1"
	c.breakAt(cell, 2)
	done, _, cancel = start(t, e, cell)
	defer cancel()
	c.waitEvent("stopped")
	c.req("next", map[string]any{"threadId": 1})
	c.waitEvent("stopped")
	c.req("continue", map[string]any{"threadId": 1})
	if r := reply(t, done); r.Err == nil || !strings.Contains(r.Err.Value, "nil map") {
		t.Fatalf("panic after a stop: %+v", r.Err)
	}

	// copyToGlobals: the local becomes a session variable.
	fn := "func sq(v int) int {\n\tw := v * v\n\treturn w\n}"
	mustRun(t, e, fn)
	c.breakAt(fn, 3)
	done, _, cancel = start(t, e, "sq(7)")
	defer cancel()
	c.waitEvent("stopped")
	_, id = c.top()
	c.req("copyToGlobals", map[string]any{"srcVariableName": "w", "dstVariableName": "w2", "srcFrameId": id})
	if g := c.vars(id, "Globals"); g["w2"]["value"] != "49" {
		t.Errorf("copied global: %v", g["w2"])
	}
	c.req("continue", map[string]any{"threadId": 1})
	if r := reply(t, done); r.Err != nil || resultText(r) != "49" {
		t.Fatalf("sq(7): %+v %v", r.Err, r.Result)
	}
	c.req("disconnect", nil)
	if r, _ := mustRun(t, e, "w2 + 1"); resultText(r) != "50" {
		t.Errorf("w2 + 1 = %v", r.Result)
	}
	if v := c.vars(0, ""); v["w2"]["value"] != "49" || v["w2"]["type"] != "int" {
		t.Errorf("variable explorer: %v", v)
	}
}
