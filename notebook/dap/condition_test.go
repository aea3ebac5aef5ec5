package dap

import (
	"context"
	"strings"
	"testing"
	"time"
)

const loopFunc = "func sum(n int) int {\n\tt := 0\n\tfor i := 0; i < n; i++ {\n\t\tt += i\n\t}\n\treturn t\n}"

// setRules sets breakpoints with DAP's condition, hitCondition and
// logMessage on code's lines and returns the response's breakpoints.
func (s *session) setRules(code string, bps ...map[string]any) []any {
	s.t.Helper()
	path := s.ok("dumpCell", map[string]any{"code": code})["sourcePath"].(string)
	list := make([]any, len(bps))
	for i, b := range bps {
		list[i] = b
	}
	r := s.ok("setBreakpoints", map[string]any{"source": map[string]any{"path": path}, "breakpoints": list})
	s.ok("configurationDone", map[string]any{})
	return r["breakpoints"].([]any)
}

// outputUntilStopped waits for the next stopped event and returns the
// console output that came before it.
func (s *session) outputUntilStopped() []string {
	s.t.Helper()
	var out []string
	deadline := time.After(patience)
	for {
		select {
		case e := <-s.events:
			b, _ := e["body"].(map[string]any)
			switch e["event"] {
			case "output":
				out = append(out, b["output"].(string))
			case "stopped":
				return out
			}
		case <-deadline:
			s.t.Fatalf("no stop within %v", patience)
		}
	}
}

// localOf is a local's value in thread 1's innermost frame.
func (s *session) localOf(name string) any {
	s.t.Helper()
	fr := s.frames(1)
	return s.scope(int(fr[0]["id"].(float64)), "Locals")[name]["value"]
}

func TestConditionalBreakpointStopsOnlyWhenTrue(t *testing.T) {
	s := newSession(t)
	s.attach()
	s.declare(1, loopFunc)
	s.setRules(loopFunc, map[string]any{"line": 4, "condition": "i == 3 || i*10 == n"})
	done := s.start(context.Background(), 2, "r := sum(5)\nq := sum(2)")
	if st := s.waitEvent("stopped"); st["reason"] != "breakpoint" {
		t.Fatalf("stopped: %v", st)
	}
	if i, tt := s.localOf("i"), s.localOf("t"); i != "3" || tt != "3" {
		t.Errorf("first stop at i=%v t=%v, want i=3 t=3 (0+1+2)", i, tt)
	}
	s.ok("continue", map[string]any{"threadId": 1})
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
	if r, q := s.it.Globals()["r"].Int(), s.it.Globals()["q"].Int(); r != 10 || q != 1 {
		t.Errorf("r, q = %d, %d", r, q)
	}
}

func TestHitConditionAndLogpoint(t *testing.T) {
	s := newSession(t)
	s.attach()
	s.declare(1, loopFunc)
	s.setRules(loopFunc,
		map[string]any{"line": 2, "logMessage": "sum({n}) starts, {{literal}}"},
		map[string]any{"line": 4, "hitCondition": "% 2"})
	done := s.start(context.Background(), 2, "r := sum(5)")
	var logged []string
	for _, o := range s.outputUntilStopped() {
		if strings.HasPrefix(o, "sum(") {
			logged = append(logged, o)
		}
	}
	if len(logged) != 1 || logged[0] != "sum(5) starts, {literal}\n" {
		t.Errorf("logpoint printed %q", logged)
	}
	// % 2: the 2nd and 4th arrivals (i = 1, 3) stop.
	if i := s.localOf("i"); i != "1" {
		t.Errorf("first hit-count stop at i=%v, want 1", i)
	}
	s.ok("continue", map[string]any{"threadId": 1})
	s.waitEvent("stopped")
	if i := s.localOf("i"); i != "3" {
		t.Errorf("second hit-count stop at i=%v, want 3", i)
	}
	s.ok("continue", map[string]any{"threadId": 1})
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
}

func TestBadBreakpointRulesAreNamed(t *testing.T) {
	s := newSession(t)
	s.attach()
	s.declare(1, loopFunc)
	bps := s.setRules(loopFunc,
		map[string]any{"line": 2, "condition": "i =="},
		map[string]any{"line": 3, "hitCondition": "often"},
		map[string]any{"line": 4, "logMessage": "t is {t"},
		map[string]any{"line": 6, "condition": "t > 1"})
	for i, want := range []string{"is not a Go expression", "hit condition \"often\"", "without a closing }", ""} {
		b := bps[i].(map[string]any)
		msg, _ := b["message"].(string)
		if (want == "") != (b["verified"] == true) || !strings.Contains(msg, want) {
			t.Errorf("breakpoint %d: %v, want message containing %q", i, b, want)
		}
	}
	if caps := capabilities(); caps["supportsConditionalBreakpoints"] != true || caps["supportsHitConditionalBreakpoints"] != true || caps["supportsLogPoints"] != true {
		t.Errorf("capabilities: %v", caps)
	}
	// A condition that cannot be evaluated stops, and says why.
	s.setRules(loopFunc, map[string]any{"line": 6, "condition": "nosuch > 1"})
	done := s.start(context.Background(), 2, "r := sum(3)")
	out := strings.Join(s.outputUntilStopped(), "")
	if !strings.Contains(out, "breakpoint condition nosuch > 1") {
		t.Errorf("console: %q", out)
	}
	s.ok("continue", map[string]any{"threadId": 1})
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
}

// Stepping over a call whose function has a breakpoint with a false
// condition steps over it: the next stop is the caller's next line.
func TestStepOverACallWithAFalseCondition(t *testing.T) {
	s := newSession(t)
	s.attach()
	s.declare(1, loopFunc)
	s.setRules(loopFunc, map[string]any{"line": 4, "condition": "i > 100"})
	cell := "a := 1\nr := sum(4)\nb := r + a"
	s.breakAt(cell, 2)
	done := s.start(context.Background(), 2, cell)
	s.waitEvent("stopped")
	s.ok("next", map[string]any{"threadId": 1})
	if st := s.waitEvent("stopped"); st["reason"] != "step" {
		t.Errorf("after next: %v", st)
	}
	if fr := s.frames(1); fr[0]["name"] != "cell[2]" || fr[0]["line"] != 3.0 {
		t.Errorf("after next over sum: %v", fr[0])
	}
	s.ok("continue", map[string]any{"threadId": 1})
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
	if b := s.it.Globals()["b"].Int(); b != 7 {
		t.Errorf("b = %d", b)
	}
}

// The same from inside a function: the step ends on the function's next
// line.
func TestStepOverACallWithAFalseConditionInAFunction(t *testing.T) {
	s := newSession(t)
	s.attach()
	s.declare(1, loopFunc)
	outer := "func twice(n int) int {\n\tx := sum(n)\n\treturn 2 * x\n}"
	s.declare(2, outer)
	s.setRules(loopFunc, map[string]any{"line": 4, "condition": "t < 0"})
	s.breakAt(outer, 2)
	done := s.start(context.Background(), 3, "r := twice(4)")
	s.waitEvent("stopped")
	s.ok("next", map[string]any{"threadId": 1})
	s.waitEvent("stopped")
	if fr := s.frames(1); fr[0]["name"] != "twice" || fr[0]["line"] != 3.0 {
		t.Errorf("after next over sum: %v", fr[0])
	}
	if x := s.localOf("x"); x != "6" {
		t.Errorf("x = %v", x)
	}
	s.ok("continue", map[string]any{"threadId": 1})
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
}
