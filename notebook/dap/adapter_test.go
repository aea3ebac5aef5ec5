package dap

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
)

func TestProtocolWithoutACell(t *testing.T) {
	s := newSession(t)
	caps := s.ok("initialize", map[string]any{"clientID": "test"})
	if caps["supportsConfigurationDoneRequest"] != true {
		t.Errorf("capabilities: %v", caps)
	}
	info := s.ok("debugInfo", map[string]any{})
	if info["isStarted"] != false || info["hashMethod"] != "Murmur2" || info["hashSeed"] != float64(HashSeed) ||
		info["tmpFileSuffix"] != ".go" || info["copyToGlobals"] != true || info["richRendering"] != true {
		t.Errorf("debugInfo before attach: %v", info)
	}
	// Requests about threads need an attached client.
	if m := s.req("stackTrace", map[string]any{"threadId": 1}); m["success"] != false {
		t.Errorf("stackTrace before attach: %v", m)
	}
	s.ok("attach", map[string]any{})
	if ev := s.waitEvent("initialized"); ev == nil {
		t.Error("no initialized event")
	}
	if out := s.waitEvent("output"); out["output"] != "attached note\n" {
		t.Errorf("attach output event: %v", out)
	}

	// dumpCell names the code as the frontend does: prefix, murmur2, suffix.
	code := "x := 1\nx++\n"
	path := s.ok("dumpCell", map[string]any{"code": code})["sourcePath"].(string)
	info = s.ok("debugInfo", map[string]any{})
	want := info["tmpFilePrefix"].(string) + strconv.FormatUint(uint64(murmur2([]byte(code), HashSeed)), 10) + ".go"
	if path != want || info["isStarted"] != true {
		t.Errorf("dumpCell path %q, want %q (debugInfo %v)", path, want, info)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != code {
		t.Errorf("dumped file: %q %v", b, err)
	}
	if src := s.ok("source", map[string]any{"source": map[string]any{"path": path}}); src["content"] != code {
		t.Errorf("source: %v", src)
	}
	if m := s.req("source", map[string]any{"source": map[string]any{"path": filepath.Join(t.TempDir(), "nope.go")}}); m["success"] != false {
		t.Errorf("source of an unknown file: %v", m)
	}

	// Breakpoints are verified, echoed, and listed by debugInfo.
	bps := s.ok("setBreakpoints", map[string]any{"source": map[string]any{"path": path}, "breakpoints": []any{map[string]any{"line": 2}}})
	bp := bps["breakpoints"].([]any)[0].(map[string]any)
	if bp["verified"] != true || bp["line"] != 2.0 || bp["source"].(map[string]any)["path"] != path {
		t.Errorf("setBreakpoints: %v", bps)
	}
	if !s.a.HasBreakpoints() {
		t.Error("HasBreakpoints false")
	}
	info = s.ok("debugInfo", map[string]any{})
	if l := info["breakpoints"].([]any); len(l) != 1 || l[0].(map[string]any)["source"] != path {
		t.Errorf("debugInfo breakpoints: %v", info["breakpoints"])
	}
	// No cell runs: no thread is stopped.
	if m := s.req("stackTrace", map[string]any{"threadId": 1}); m["success"] != false {
		t.Errorf("stackTrace with no cell: %v", m)
	}
	if th := s.ok("threads", nil)["threads"].([]any); len(th) != 1 {
		t.Errorf("threads: %v", th)
	}
	if m := s.req("frobnicate", nil); m["success"] != false || !contains(m["message"].(string), "frobnicate") {
		t.Errorf("unknown request: %v", m)
	}
	s.ok("disconnect", map[string]any{"restart": false, "terminateDebuggee": true})
	if s.a.Attached() || s.a.HasBreakpoints() {
		t.Error("still attached or breakpoints kept after disconnect")
	}
	if got := s.host.attached; !reflect.DeepEqual(got, []bool{true, false}) {
		t.Errorf("host told %v", got)
	}
	if err := s.a.Close(); err != nil {
		t.Error(err)
	}
}

type point struct {
	X, Y int
	tag  string
}

func TestVariableExplorerWithoutBreakpoint(t *testing.T) {
	s := newSession(t)
	s.host.vars = []Var{
		{Name: "n", Type: "int", Value: reflect.ValueOf(42)},
		{Name: "p", Type: "main.point", Value: reflect.ValueOf(point{1, 2, "a"})},
		{Name: "m", Value: reflect.ValueOf(map[string][]int{"b": {3}, "a": {1, 2}})},
		{Name: "s", Value: reflect.ValueOf("Hello the world")},
	}
	vars := map[string]map[string]any{}
	for _, v := range s.ok("inspectVariables", nil)["variables"].([]any) {
		v := v.(map[string]any)
		vars[v["name"].(string)] = v
	}
	if v := vars["n"]; v["value"] != "42" || v["type"] != "int" || v["variablesReference"] != 0.0 {
		t.Errorf("n: %v", v)
	}
	if v := vars["p"]; v["value"] != `{X: 1, Y: 2, tag: "a"}` || v["type"] != "main.point" {
		t.Errorf("p: %v", v)
	}
	fields := s.vars(int(vars["p"]["variablesReference"].(float64)))
	if fields["Y"]["value"] != "2" || fields["Y"]["evaluateName"] != "p.Y" || fields["tag"]["value"] != `"a"` {
		t.Errorf("p's fields: %v", fields)
	}
	m := s.vars(int(vars["m"]["variablesReference"].(float64)))
	if m[`"a"`]["value"] != "[1 2]" || m[`"a"`]["evaluateName"] != `m["a"]` {
		t.Errorf("m's entries: %v", m)
	}
	if r := s.ok("richInspectVariables", map[string]any{"variableName": "s"}); !reflect.DeepEqual(r["data"], map[string]any{"text/plain": `"Hello the world"`}) {
		t.Errorf("richInspectVariables s: %v", r)
	}
	if r := s.ok("evaluate", map[string]any{"expression": "n*2 + p.Y", "context": "repl"}); r["result"] != "86" || r["type"] != "int" {
		t.Errorf("evaluate: %v", r)
	}
	if r := s.ok("evaluate", map[string]any{"expression": `"a" + "b"`, "context": "repl"}); r["result"] != `"ab"` {
		t.Errorf("evaluate: %v", r)
	}
	if m := s.req("evaluate", map[string]any{"expression": "f(1)"}); m["success"] != false || !contains(m["message"].(string), "does not call functions") {
		t.Errorf("a call: %v", m)
	}
}
