package notebook

// The engine's side of the debugger (JEP 47; the adapter is package
// notebook/dap): it implements kernel.Debugger by handing requests to the
// adapter, answers the adapter's questions about the session (debugHost),
// decides when a compiled session moves to the interpreter and back (the
// interpreter runner carries it: package yaegirunner), and tells the user
// what debugging changes (stderr of the cell and an output event).
//
// The engine calls into the adapter only while a debug session is active
// (a client attached: debugHost.Attached): cells' code, and the
// interpreter's programs, are handed to it when the session begins, and
// from then on as cells run.

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/goaccel/goaccel/notebook/dap"
	"github.com/goaccel/goaccel/notebook/internal/session"
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
	h.e.setDebugging(on)
	compiled := h.e.compiled != nil
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
	var vars []session.Var
	if e.compiled != nil && !e.dbgState.live {
		vars = e.compiled.Values()
	} else {
		vars = e.interp.Values()
	}
	out := make([]dap.Var, 0, len(vars))
	for _, v := range vars {
		out = append(out, dap.Var{Name: v.Name, Type: v.Type, Value: v.Value})
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

// noteLaunch says that breakpoints in a launched function are not hit: the
// workers are other processes.
func (e *Engine) noteLaunch(name string) {
	if !e.debugging.Load() {
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
func (e *Engine) debugMode(ctx context.Context, c *session.Cell) bool {
	st := &e.dbgState
	switch {
	case !e.debugging.Load():
		st.refused = false
		if st.live {
			e.debugNote(e.interp.Restore(ctx, e.compiled, st.since, st.last))
			st.live = false
		}
	case !st.live && !st.refused && e.dbg.HasBreakpoints():
		note, ok := e.interp.Adopt(ctx, e.compiled)
		e.debugNote(note)
		st.live, st.refused = ok, !ok
		if ok {
			st.since = c.Count
		}
	}
	if st.live {
		st.last = c.Count
	}
	return st.live
}

// debugNote tells the user something about debugging: on the cell's stderr
// and, while a client is attached, in the debugger's console.
func (e *Engine) debugNote(msg string) {
	e.out.Stderr(msg + "\n")
	if e.debugging.Load() {
		e.dbg.Output("important", msg+"\n")
	}
}

// setDebugging records that a debug session began (on) or ended. As one
// begins, the adapter learns the code of every cell that ran before (the
// positions of their declarations name those cells).
func (e *Engine) setDebugging(on bool) {
	// The flag goes up before the codes are read: a cell that starts
	// meanwhile either finds it up and hands its code itself, or is
	// among the codes (recordCode).
	e.debugging.Store(on)
	if !on {
		return
	}
	e.codeMu.Lock()
	codes := make(map[int]string, len(e.codes))
	for n, code := range e.codes {
		codes[n] = code
	}
	e.codeMu.Unlock()
	for n, code := range codes {
		e.dbg.SetCellCode(n, code)
	}
}

// recordCode keeps the code of cell n (as the frontend sent it, magics
// included), and hands it to the adapter while a debug session is active.
func (e *Engine) recordCode(n int, code string) {
	if n <= 0 {
		return
	}
	e.codeMu.Lock()
	e.codes[n] = code
	e.codeMu.Unlock()
	if e.debugging.Load() {
		e.dbg.SetCellCode(n, code)
	}
}

// syncDebugger attaches the adapter to the interpreter runner while a
// debug session is active, and detaches it when the session ended; it is
// called as each cell starts.
func (e *Engine) syncDebugger() {
	on := e.debugging.Load()
	if on == e.interpDebugged {
		return
	}
	if on {
		e.interp.Attach(e.dbg)
	} else {
		e.interp.Detach()
	}
	e.interpDebugged = on
}
