package notebook

// The engine's side of the debugger (JEP 47; the adapter is package
// notebook/dap): it implements kernel.Debugger by handing requests to the
// adapter, answers the adapter's questions about the session (debugHost),
// runs interpreted cells' statements under yaegi's debugger while a client
// is attached, and tells the user what debugging changes (stderr of the
// cell and an output event). debugsync.go moves a compiled session into the
// interpreter and back.

import (
	"context"
	"encoding/json"
	"fmt"
	"go/parser"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/traefik/yaegi/interp"

	"github.com/goaccel/goaccel/notebook/dap"
)

// debugState is where debugging left the session; guarded by execMu.
type debugState struct {
	// live: the compiled session was carried into the interpreter and
	// cells run there (under the debugger) until the client detaches.
	live bool
	// refused: carrying failed; cells stay compiled until the client
	// detaches.
	refused bool
	// since and last are the first and the latest cell run interpreted.
	since, last int
	// saved is the interpreter compiled sessions had before.
	saved *interp.Interpreter
}

// HandleDebug answers a debug_request (kernel.Debugger).
func (e *Engine) HandleDebug(ctx context.Context, request json.RawMessage) (json.RawMessage, []json.RawMessage) {
	resp, events := e.dbg.Handle(ctx, request)
	out := make([]json.RawMessage, len(events))
	for i, ev := range events {
		out[i] = ev
	}
	return resp, out
}

// SetDebugEvents sets where debug events go (kernel.Debugger).
func (e *Engine) SetDebugEvents(publish func(json.RawMessage)) {
	e.dbg.SetEvents(func(ev []byte) { publish(ev) })
}

// debugHost is the session as the adapter sees it.
type debugHost struct{ e *Engine }

func (h debugHost) Attached(on bool) string {
	compiled := h.e.comp != nil
	switch {
	case on && !compiled:
		return "goaccel: the debugger is attached: cells run on the interpreter (yaegi) and stop at breakpoints."
	case on:
		return "goaccel: the debugger is attached. Compiled code cannot stop at breakpoints: from the next cell run " +
			"while a breakpoint is set, cells run on the interpreter (yaegi), with the declarations of the compiled " +
			"cells replayed there and their variables' values copied. Turning the debugger off goes back to compiled cells."
	case compiled:
		return "goaccel: the debugger is detached; breakpoints are gone. The next cell carries what interpreted cells declared back to compiled cells."
	}
	return "goaccel: the debugger is detached; breakpoints are gone."
}

// Globals lists the session's variables for the variable explorer. It waits
// (briefly: requests on the control channel wait meanwhile) for a running
// cell to end.
func (h debugHost) Globals(ctx context.Context) ([]dap.Var, error) {
	e := h.e
	deadline := time.Now().Add(200 * time.Millisecond) // the control channel waits meanwhile
	for !e.execMu.TryLock() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("a cell is running: its variables are listed when it ends")
		}
		time.Sleep(10 * time.Millisecond)
	}
	defer e.execMu.Unlock()
	if e.comp != nil && !e.dbgState.live {
		var out []dap.Var
		for _, v := range e.comp.Entries() {
			if !hiddenName(v.Name) {
				out = append(out, dap.Var{Name: v.Name, Type: v.Type, Value: v.Value})
			}
		}
		return out, nil
	}
	g := e.interp().Globals()
	var out []dap.Var
	for _, n := range e.varNames() {
		if v, ok := g[n]; ok && v.IsValid() {
			out = append(out, dap.Var{Name: n, Value: v})
		}
	}
	return out, nil
}

func (h debugHost) Rich(v reflect.Value) (b map[string]any) {
	defer func() {
		if r := recover(); r != nil {
			b = nil
		}
	}()
	if !v.IsValid() || !v.CanInterface() {
		return nil
	}
	return resultBundle([]any{v.Interface()}, false)
}

// hiddenName reports the names the engine declares for itself.
func hiddenName(n string) bool { return n == "_" || strings.HasPrefix(n, "_gx") }

// varNames lists the session's variables (from the declaration log), sorted.
func (e *Engine) varNames() []string {
	seen := map[string]bool{}
	for _, d := range e.Declarations() {
		if d.Kind != KindVar {
			continue
		}
		names := d.Names
		if len(names) == 0 {
			names = []string{d.Name}
		}
		for _, n := range names {
			if !hiddenName(n) {
				seen[n] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// debugTypeName names an interpreted value's type as cells write it (the
// interpreter's reflect types of declared types have no names).
func (e *Engine) debugTypeName(t reflect.Type) string {
	m := e.dbgNames.Load()
	if m == nil {
		return ""
	}
	if n, ok := (*m)[t]; ok {
		return n
	}
	switch t.Kind() {
	case reflect.Pointer:
		if n, ok := (*m)[t.Elem()]; ok {
			return "*" + n
		}
	case reflect.Slice:
		if n, ok := (*m)[t.Elem()]; ok {
			return "[]" + n
		}
	}
	return ""
}

// debugNote tells the user something about debugging: on the cell's stderr
// and in the debugger's console.
func (e *Engine) debugNote(msg string) {
	e.out.write("stderr", []byte(msg+"\n"))
	e.dbg.Output("important", msg+"\n")
}

// runBody runs a cell's statements: under the debugger while a client is
// attached.
func (e *Engine) runBody(ctx context.Context, it *interp.Interpreter, cs *cellState, prog *interp.Program) error {
	if !e.dbg.Attached() {
		return e.runProgram(ctx, it, prog)
	}
	if names, err := e.typeNames(e.Declarations()); err == nil {
		e.dbgNames.Store(&names)
	}
	err := e.dbg.Run(ctx, it, prog)
	e.keepCopied(it, cs)
	return err
}

// keepCopied declares the variables copyToGlobals made while the cell was
// stopped.
func (e *Engine) keepCopied(it *interp.Interpreter, cs *cellState) {
	copied := e.dbg.TakeCopied()
	if len(copied) == 0 {
		return
	}
	names, _ := e.typeNames(e.Declarations())
	local := map[string]string{}
	for n, p := range e.Imports() {
		local[p] = n
	}
	for _, c := range copied {
		texpr, err := typeExpr(c.Value.Type(), names, local)
		if err == nil {
			err = e.declareVar(it, c.Name, texpr, c.Value)
		}
		if err != nil {
			e.debugNote(fmt.Sprintf("goaccel: copyToGlobals: %s could not become a session variable: %v", c.Name, err))
			continue
		}
		e.mu.Lock()
		e.logDecl(Declaration{Kind: KindVar, Name: c.Name, Names: []string{c.Name}, Source: "var " + c.Name + " " + texpr,
			FromStatement: true, Cell: cs.count})
		e.mu.Unlock()
	}
}

// declareVar declares `var name texpr` in it and sets it to v.
func (e *Engine) declareVar(it *interp.Interpreter, name, texpr string, v reflect.Value) error {
	f, err := parser.ParseFile(it.FileSet(), "_.go", "package main\n//line goaccel/_.go:1:1\nvar "+name+" "+texpr+"\n", 0)
	if err != nil {
		return fmt.Errorf("declaring it: %w", err)
	}
	prog, err := compileAST(it, f)
	if err == nil {
		err = e.runProgram(context.Background(), it, prog)
	}
	if err != nil {
		return fmt.Errorf("declaring it as %s: %w", texpr, err)
	}
	dst, ok := it.Globals()[name]
	if !ok || !dst.CanSet() || !v.Type().AssignableTo(dst.Type()) {
		return fmt.Errorf("its value (%s) does not fit the declared %s", v.Type(), texpr)
	}
	dst.Set(v)
	return nil
}

// noteLaunch says that breakpoints in a launched function are not hit: the
// workers are other processes.
func (e *Engine) noteLaunch(name string) {
	if !e.dbg.Attached() {
		return
	}
	for _, d := range e.Declarations() {
		if d.Kind != KindFunc || d.Name != name || d.SrcCell == 0 {
			continue
		}
		if e.dbg.BreakpointsIn(d.SrcCell, d.Line, d.Line+strings.Count(d.Source, "\n")) {
			e.debugNote(fmt.Sprintf("goaccel: the breakpoints in %s (cell[%d]) are not hit: launched functions run in worker processes, which the debugger does not debug", name, d.SrcCell))
		}
	}
}

// debugMode decides, before a cell of a compiled session runs, whether it
// runs interpreted: it carries the session into the interpreter when a
// client is attached and a breakpoint is set, and back when the client
// detached.
func (e *Engine) debugMode(ctx context.Context, cs *cellState) bool {
	attached := e.dbg.Attached()
	st := &e.dbgState
	switch {
	case !attached:
		st.refused = false
		if st.live {
			e.leaveInterpreted(ctx, cs)
		}
	case !st.live && !st.refused && e.dbg.HasBreakpoints():
		e.enterInterpreted(ctx, cs)
	}
	if st.live {
		st.last = cs.count
	}
	return st.live
}

// lineDirective positions what follows at line of cell n (encoded, so one
// file can hold several cells' code; see dap.EncodeLine).
func lineDirective(n, line, col int) string {
	if n <= 0 || line <= 0 {
		return "//line goaccel/_.go:1:1\n"
	}
	return fmt.Sprintf("//line %s:%d:%d\n", cellFileName(n), dap.EncodeLine(n, line), max(col, 1))
}

// decodedPositions rewrites encoded lines in positions of a message.
func decodedPositions(s string) string {
	return encodedPos.ReplaceAllStringFunc(s, func(m string) string {
		sub := encodedPos.FindStringSubmatch(m)
		line, err := strconv.Atoi(sub[2])
		if err != nil {
			return m
		}
		return sub[1] + strconv.Itoa(line%dap.LineBase)
	})
}

// encodedPos matches a cell position whose line is encoded.
var encodedPos = regexp.MustCompile(`(cell\[\d+\](?:/_\.go)?:)(\d{7,})`)
