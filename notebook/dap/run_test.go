package dap

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/traefik/yaegi/interp"
)

const funcCell = "func f(a, b int) int {\n\tc := a + b\n\treturn c\n}"

// The scenario of ipykernel's test_debugger: a breakpoint in a function of
// an earlier cell stops the cell that calls it; stack, scopes, variables,
// evaluate, rich inspection, stepping and continue work.
func TestBreakpointInAnEarlierCellsFunction(t *testing.T) {
	s := newSession(t)
	s.attach()
	s.declare(1, funcCell)
	s.breakAt(funcCell, 2)
	done := s.start(context.Background(), 2, "x := 40\ny := f(x, 2)\nz := y + 1")

	st := s.waitEvent("stopped")
	if st["reason"] != "breakpoint" || st["threadId"] != 1.0 {
		t.Fatalf("stopped: %v", st)
	}
	if th := s.ok("threads", nil)["threads"].([]any); len(th) != 1 || th[0].(map[string]any)["id"] != 1.0 {
		t.Errorf("threads: %v", th)
	}
	frames := s.frames(1)
	top := frames[0]
	src := top["source"].(map[string]any)
	if top["name"] != "f" || top["line"] != 2.0 || src["path"] != s.a.PathOf(funcCell) || src["name"] != "cell[1]" {
		t.Errorf("top frame: %v", top)
	}
	info := s.ok("debugInfo", nil)
	if ids := info["stoppedThreads"].([]any); len(ids) != 1 || ids[0] != 1.0 {
		t.Errorf("debugInfo stoppedThreads: %v", info["stoppedThreads"])
	}
	fid := int(top["id"].(float64))
	locals := s.scope(fid, "Locals")
	if locals["a"]["value"] != "40" || locals["b"]["value"] != "2" || locals["c"]["value"] != "0" || locals["a"]["type"] != "int" {
		t.Errorf("locals: %v", locals)
	}
	if g := s.scope(fid, "Globals"); g["x"]["value"] != "40" {
		t.Errorf("globals: %v", g)
	}
	if r := s.ok("evaluate", map[string]any{"expression": "a + b*10", "frameId": fid, "context": "repl"}); r["result"] != "60" {
		t.Errorf("evaluate: %v", r)
	}
	if r := s.ok("richInspectVariables", map[string]any{"variableName": "a", "frameId": fid}); r["data"].(map[string]any)["text/plain"] != locals["a"]["value"] {
		t.Errorf("richInspectVariables: %v", r)
	}

	// next: to line 3, c computed.
	s.ok("next", map[string]any{"threadId": 1})
	if st := s.waitEvent("stopped"); st["reason"] != "step" {
		t.Fatalf("after next: %v", st)
	}
	frames = s.frames(1)
	if frames[0]["line"] != 3.0 {
		t.Errorf("after next at %v", frames[0])
	}
	if c := s.scope(int(frames[0]["id"].(float64)), "Locals")["c"]; c["value"] != "42" {
		t.Errorf("c after next: %v", c)
	}
	// stepOut: back in the cell.
	s.ok("stepOut", map[string]any{"threadId": 1})
	s.waitEvent("stopped")
	frames = s.frames(1)
	if frames[0]["name"] != "cell[2]" || frames[0]["source"].(map[string]any)["name"] != "cell[2]" {
		t.Errorf("after stepOut: %v", frames)
	}
	// next: line 3 of the cell.
	s.ok("next", map[string]any{"threadId": 1})
	s.waitEvent("stopped")
	if frames = s.frames(1); frames[0]["line"] != 3.0 {
		t.Errorf("after the cell's next: %v", frames[0])
	}
	s.ok("continue", map[string]any{"threadId": 1})
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
	if z := s.it.Globals()["z"]; z.Int() != 43 {
		t.Errorf("z = %v", z)
	}
}

func TestStepInAndPanicWhileStopped(t *testing.T) {
	s := newSession(t)
	s.attach()
	s.declare(1, funcCell)
	cell := "y := f(1, 2)\nvar m map[string]int\nm[\"x\"] = y"
	s.breakAt(cell, 1)
	done := s.start(context.Background(), 2, cell)
	s.waitEvent("stopped")
	s.ok("stepIn", map[string]any{"threadId": 1})
	s.waitEvent("stopped")
	if fr := s.frames(1); fr[0]["name"] != "f" || fr[0]["line"] != 2.0 {
		t.Errorf("after stepIn: %v", fr[0])
	}
	// Out, onto the rest of line 1 (whose breakpoint does not stop again).
	s.ok("stepOut", map[string]any{"threadId": 1})
	if st := s.waitEvent("stopped"); st["reason"] != "step" {
		t.Errorf("after stepOut: %v", st)
	}
	if fr := s.frames(1); fr[0]["name"] != "cell[2]" || fr[0]["line"] != 1.0 {
		t.Errorf("after stepOut: %v", fr[0])
	}
	s.ok("continue", map[string]any{"threadId": 1})
	err := wait(t, done)
	var p interp.Panic
	if !errors.As(err, &p) || !strings.Contains(fmt.Sprint(p.Value), "nil map") {
		t.Fatalf("want the cell's panic, got %v", err)
	}
	// The adapter is ready for the next cell.
	done = s.start(context.Background(), 3, "w := 1")
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
}

func TestBreakpointInAGoroutineTheCellStarted(t *testing.T) {
	s := newSession(t)
	s.attach()
	decl := "func send(ch chan int) {\n\tv := 7\n\tch <- v\n}"
	s.declare(1, decl)
	s.breakAt(decl, 3)
	// A goroutine started by calling a declared function is a thread of its
	// own; code in a function literal counts, for yaegi, as the goroutine
	// that made it (thread 1 here), and stops all the same.
	cell := "ch := make(chan int)\ngo send(ch)\nr := <-ch\ngo func() {\n\tw := r + 1\n\tch <- w\n}()\nr = <-ch"
	s.breakAt(cell, 6)
	done := s.start(context.Background(), 2, cell)
	st := s.waitEvent("stopped")
	if id := st["threadId"].(float64); id == 1 {
		t.Fatalf("go send(ch) stopped as thread 1: %v", st)
	}
	// JupyterLab asks about thread 1: it gets the stopped goroutine.
	fr := s.frames(1)
	if fr[0]["line"] != 3.0 || fr[0]["name"] != "send" {
		t.Errorf("goroutine frame: %v", fr[0])
	}
	if v := s.scope(int(fr[0]["id"].(float64)), "Locals")["v"]; v["value"] != "7" {
		t.Errorf("v: %v", v)
	}
	s.ok("continue", map[string]any{"threadId": 1})
	s.waitEvent("stopped")
	fr = s.frames(1)
	if fr[0]["line"] != 6.0 || fr[0]["name"] != "func literal" {
		t.Errorf("function literal's frame: %v", fr[0])
	}
	if w := s.scope(int(fr[0]["id"].(float64)), "Locals")["w"]; w["value"] != "8" {
		t.Errorf("w: %v", w)
	}
	s.ok("continue", map[string]any{"threadId": 1})
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
	if r := s.it.Globals()["r"]; r.Int() != 8 {
		t.Errorf("r = %v", r)
	}
}

func TestInterruptWhileStopped(t *testing.T) {
	s := newSession(t)
	s.attach()
	cell := "n := 0\nfor i := 0; i < 10; i++ {\n\tn += i\n}"
	s.breakAt(cell, 3)
	ctx, cancel := context.WithCancel(context.Background())
	done := s.start(ctx, 1, cell)
	s.waitEvent("stopped")
	if g := s.scope(int(s.frames(1)[0]["id"].(float64)), "Globals"); g["i"]["value"] != "0" {
		t.Errorf("loop variable: %v", g["i"])
	}
	s.a.mu.Lock()
	r := s.a.run
	s.a.mu.Unlock()
	cancel()
	if err := wait(t, done); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted cell: %v", err)
	}
	// The stopped program terminated: Run did not give up on it.
	select {
	case <-r.terminated:
	default:
		t.Error("Run returned before the interrupted program terminated")
	}
	if ev := s.waitEvent("continued"); ev["threadId"] != 1.0 {
		t.Errorf("continued: %v", ev)
	}
	// A continue that races with an interrupt returns at once.
	ctx, cancel = context.WithCancel(context.Background())
	done = s.start(ctx, 2, cell)
	s.waitEvent("stopped")
	start := time.Now()
	cancel()
	s.req("continue", map[string]any{"threadId": 1})
	if d := time.Since(start); d > prompt {
		t.Errorf("continue after an interrupt took %v", d)
	}
	if err := wait(t, done); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted cell: %v", err)
	}
	// Breakpoints still work in the next cell.
	done = s.start(context.Background(), 3, cell)
	s.waitEvent("stopped")
	s.ok("continue", map[string]any{"threadId": 1})
	s.waitEvent("stopped") // the next iteration
	s.ok("disconnect", map[string]any{})
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
	if n := s.it.Globals()["n"]; n.Int() != 45 {
		t.Errorf("n = %v after disconnect", n)
	}
}

func TestPauseAndCopyToGlobals(t *testing.T) {
	s := newSession(t)
	s.attach()
	s.declare(1, "type P struct {\n\tX   int\n\tname string\n}\nfunc spin(p P) int {\n\tfor {\n\t\tp.X++\n\t}\n}")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := s.start(ctx, 2, "spin(P{X: 1, name: \"q\"})")
	// A pause before the program runs is refused, and one before it reaches
	// spin stops it on its way there: pause (again) until it is in spin.
	var fr []map[string]any
	for deadline := time.Now().Add(patience); ; {
		if time.Now().After(deadline) {
			t.Fatalf("never paused in spin (last: %v)", fr)
		}
		if m := s.req("pause", map[string]any{"threadId": 1}); m["success"] != true {
			time.Sleep(5 * time.Millisecond) // not running yet
			continue
		}
		if st := s.waitEvent("stopped"); st["reason"] != "pause" {
			t.Errorf("paused: %v", st)
		}
		if fr = s.frames(1); fr[0]["name"] == "spin" {
			break
		}
		s.ok("continue", map[string]any{"threadId": 1})
	}
	fid := int(fr[0]["id"].(float64))
	p := s.scope(fid, "Locals")["p"]
	if !strings.HasPrefix(p["value"].(string), "{X: ") || !strings.HasSuffix(p["value"].(string), `, name: "q"}`) {
		t.Errorf("p: %v", p)
	}
	if r := s.ok("evaluate", map[string]any{"expression": "p.name", "frameId": fid}); r["result"] != `"q"` {
		t.Errorf("p.name: %v", r)
	}
	s.ok("copyToGlobals", map[string]any{"srcVariableName": "p", "dstVariableName": "saved", "srcFrameId": fid})
	g := s.scope(fid, "Globals")["saved"]
	if g["type"] != p["type"] || !strings.HasSuffix(g["value"].(string), `, name: "q"}`) {
		t.Errorf("copied global %v, local %v", g, p)
	}
	copied := s.a.TakeCopied()
	if len(copied) != 1 || copied[0].Name != "saved" {
		t.Errorf("TakeCopied: %v", copied)
	}
	// Detached, the loop runs on until it is interrupted.
	s.ok("disconnect", map[string]any{})
	select {
	case err := <-done:
		t.Fatalf("the cell ended on disconnect: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	cancel()
	if err := wait(t, done); !errors.Is(err, context.Canceled) {
		t.Errorf("interrupted: %v", err)
	}
}

// Goroutines running function literals share yaegi's thread 1: three that
// stop at once are shown and resumed one after the other.
func TestGoroutinesSharingAThread(t *testing.T) {
	s := newSession(t)
	s.attach()
	cell := "ch := make(chan int)\nfor i := 1; i <= 3; i++ {\n\tgo func(k int) {\n\t\tv := k * 10\n\t\tch <- v\n\t}(i)\n}\ntotal := <-ch + <-ch + <-ch"
	s.breakAt(cell, 5)
	done := s.start(context.Background(), 1, cell)
	seen := map[string]bool{}
	for n := 0; n < 3; n++ {
		if st := s.waitEvent("stopped"); st["reason"] != "breakpoint" {
			t.Fatalf("stop %d: %v", n, st)
		}
		fr := s.frames(1)
		if fr[0]["line"] != 5.0 {
			t.Errorf("stop %d at %v", n, fr[0])
		}
		v := s.scope(int(fr[0]["id"].(float64)), "Locals")["v"]["value"].(string)
		if seen[v] {
			t.Errorf("stop %d shows v = %s again", n, v)
		}
		seen[v] = true
		s.ok("continue", map[string]any{"threadId": 1})
	}
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
	if total := s.it.Globals()["total"]; total.Int() != 60 {
		t.Errorf("total = %v", total)
	}
}
