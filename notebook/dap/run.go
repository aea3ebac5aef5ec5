package dap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"time"

	"github.com/traefik/yaegi/interp"
)

// maxAutoSteps bounds the steps one next/stepIn/stepOut takes on its own to
// reach another line (a loop on one line would otherwise never stop).
const maxAutoSteps = 100_000

// settle is how long Run waits, after the interpreter said it terminated,
// for the debugger to let go of the interpreter (and, after an interrupt,
// for the cell's goroutine to unwind).
const settle = 50 * time.Millisecond

// run is a program running under yaegi's debugger.
type run struct {
	it         *interp.Interpreter
	dbg        *interp.Debugger
	terminated chan struct{}
	// stepping holds the threads a step request resumed, until they stop.
	stepping map[int]*step
	// entered holds where threads stopped on a statement's entry node, so
	// that the stop on the same statement's own node is let pass.
	entered map[enteredKey]bool
	// gate holds, per thread, a stop that is reported or being resumed.
	// yaegi shares one thread (its resume channel and mode) between the
	// goroutines that run function literals of the cell (see the package
	// documentation): a second goroutine that stops waits here, before it
	// waits on yaegi, until the first one was resumed, so that a resume
	// always wakes the goroutine whose stop the client was shown.
	gate map[int]chan struct{}
	done <-chan struct{} // the run's context's
}

type enteredKey struct {
	thread int
	at     location
}

// step is a step in progress.
type step struct {
	mode   interp.DebugEventReason
	from   location
	count  int
	reason string // the stopped event's reason when it is not the mode's
}

// location is where a thread stopped.
type location struct {
	file  string
	line  int
	fn    string
	depth int
	raw   posKey // the position as yaegi reports it
}

// calledFrom reports whether l is in a function called, directly or not,
// from where from is. A cell's own statements run in yaegi's root frame
// ("<init>"), which FrameDepth counts as 1, as it does the first function
// they call: everything that is not the root is called from it.
func (l location) calledFrom(from location) bool {
	if from.fn == rootFrame {
		return l.fn != rootFrame
	}
	return l.depth > from.depth
}

// rootFrame is the name yaegi gives the frame of a program's top level.
const rootFrame = "<init>"

// cellCode reports whether the location is in a cell's code.
func (l location) cellCode() bool { return cellOf(l.file) > 0 }

// Run runs prog on it under yaegi's debugger, with the breakpoints set, and
// returns when the program and every goroutine it started have ended, or
// when ctx ends (then with ctx's error). The interpreter must not run
// anything else meanwhile.
func (a *Adapter) Run(ctx context.Context, it *interp.Interpreter, prog *interp.Program) error {
	r := &run{it: it, terminated: make(chan struct{}), stepping: map[int]*step{}, entered: map[enteredKey]bool{},
		gate: map[int]chan struct{}{}, done: ctx.Done()}
	a.mu.Lock()
	if a.run != nil {
		a.mu.Unlock()
		return errors.New("debug: a program is already running under the debugger")
	}
	a.run = r
	a.mu.Unlock()
	defer a.endRun(r)

	r.dbg = it.Debug(ctx, prog, func(e *interp.DebugEvent) { a.onEvent(r, e) }, &interp.DebugOptions{GoRoutineStartAt1: true})
	func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.applyLocked(r, a.programs)
	}()
	if err := r.dbg.Continue(1); err != nil {
		return fmt.Errorf("debug: starting the program: %w", err)
	}
	select {
	case <-r.terminated:
	case <-ctx.Done():
		select {
		case <-r.terminated:
		case <-time.After(3 * time.Second):
			// Goroutines of the cell are blocked where they cannot be
			// stopped; they keep running.
		}
		waitDetached(it)
		time.Sleep(settle)
		return ctx.Err()
	}
	waitDetached(it)
	_, err := r.dbg.Wait()
	if ctx.Err() != nil {
		time.Sleep(settle)
		return ctx.Err()
	}
	return err
}

// waitDetached waits (up to a second) until yaegi's debugger has let go of
// the interpreter: it clears the interpreter's debugger just after its
// terminate event, and a later Debug must not be overwritten by that.
func waitDetached(it *interp.Interpreter) {
	f := reflect.ValueOf(it).Elem().FieldByName("debugger")
	if !f.IsValid() || f.Kind() != reflect.Pointer {
		time.Sleep(settle)
		return
	}
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if f.IsNil() {
			return
		}
	}
}

// endRun forgets the run and tells the client that stopped threads are gone.
func (a *Adapter) endRun(r *run) {
	a.mu.Lock()
	stopped := a.stopped()
	a.stops = map[int]*stop{}
	if a.run == r {
		a.run = nil
	}
	for id := range r.gate {
		r.openGateLocked(id)
	}
	a.clearRefsLocked()
	a.mu.Unlock()
	for _, id := range stopped {
		a.emit("continued", map[string]any{"threadId": id, "allThreadsContinued": false})
	}
}

// onEvent handles an event of yaegi's debugger, on the goroutine it
// concerns (which waits, when it stops, until it is resumed).
func (a *Adapter) onEvent(r *run, e *interp.DebugEvent) {
	switch e.Reason() {
	case interp.DebugTerminate:
		close(r.terminated)
		return
	case interp.DebugEnterGoRoutine, interp.DebugExitGoRoutine:
		if id := e.GoRoutine(); id != 1 {
			reason := "started"
			if e.Reason() == interp.DebugExitGoRoutine {
				reason = "exited"
			}
			a.emit("thread", map[string]any{"reason": reason, "threadId": id})
		}
		return
	}
	id := e.GoRoutine()
	at := locate(e)
	if !a.enterGate(r, id) {
		return // the run is ending
	}
	isBreak := e.Reason() == interp.DebugBreak
	if isBreak {
		key := enteredKey{id, location{file: at.file, line: at.line, fn: at.fn, depth: at.depth}}
		kind := a.kinds[at.raw]
		if kind == bpBoth {
			kind = bpEntry
			if r.entered[key] {
				kind = bpStmt
			}
		}
		switch kind {
		case bpEntry:
			r.entered[key] = true
		case bpStmt:
			if r.entered[key] {
				// The statement's entry node stopped already: this stop is
				// the statement's own node. A continuing thread goes on; a
				// stepping one takes it as a step.
				delete(r.entered, key)
				if r.stepping[id] == nil {
					a.mu.Unlock()
					go a.wake(r, id, 0)
					return
				}
				isBreak = false
			}
		}
	}
	if rule := a.ruleAtLocked(at); isBreak && rule != nil {
		stop, output := a.decideLocked(rule, e)
		if output != "" {
			a.mu.Unlock()
			a.Output("console", output)
			a.mu.Lock()
		}
		if !stop {
			st := r.stepping[id]
			switch {
			case st == nil:
				a.mu.Unlock()
				go a.wake(r, id, 0)
				return
			case st.mode != interp.DebugStepInto && at.calledFrom(st.from):
				// A step over a call arrived at a breakpoint in the callee
				// that does not stop: out of the callee, the step goes on.
				st.count++
				a.mu.Unlock()
				go a.wake(r, id, interp.DebugStepOut)
				return
			}
			isBreak = false // a step that arrived here: the step decides
		}
	}
	if st := r.stepping[id]; st != nil && !isBreak && st.count < maxAutoSteps && st.moveOn(at) {
		st.count++
		mode := st.mode
		if mode == interp.DebugStepOut {
			mode = interp.DebugStepOver // out already: on to a line of cell code
			st.mode = mode
		}
		a.mu.Unlock()
		go a.wake(r, id, mode)
		return
	}
	reason := map[interp.DebugEventReason]string{
		interp.DebugBreak: "breakpoint", interp.DebugPause: "pause", interp.DebugEntry: "entry",
		interp.DebugStepInto: "step", interp.DebugStepOver: "step", interp.DebugStepOut: "step",
	}[e.Reason()]
	if !isBreak && e.Reason() == interp.DebugBreak {
		reason = "step"
	}
	if st := r.stepping[id]; st != nil && st.reason != "" && !isBreak {
		reason = st.reason
	}
	if reason == "" {
		reason = "pause"
	}
	delete(r.stepping, id)
	a.stops[id] = &stop{ev: e, reason: reason, at: at}
	a.mu.Unlock()
	a.emit("stopped", map[string]any{"reason": reason, "threadId": id, "allThreadsStopped": false})
}

// moveOn reports whether a step that arrived at `at` goes on by itself: it
// has not left the line it started on, in the same function at the same
// depth, or it is in code that is no cell's.
func (st *step) moveOn(at location) bool {
	if !at.cellCode() {
		return true
	}
	if st.mode == interp.DebugStepOut {
		return false
	}
	return at.file == st.from.file && at.line == st.from.line && at.fn == st.from.fn && at.depth == st.from.depth
}

// locate is where the event's goroutine is.
func locate(e *interp.DebugEvent) location {
	fs := e.Frames(0, 1)
	if len(fs) == 0 {
		return location{}
	}
	p := fs[0].Position()
	return location{file: p.Filename, line: decodeLine(p.Line), fn: fs[0].Name(), depth: e.FrameDepth(),
		raw: posKey{p.Filename, p.Line, p.Column}}
}

// enterGate waits until no other stop of thread id is outstanding and
// takes the gate; it returns with a.mu held, or false (without it) when the
// run ends meanwhile.
func (a *Adapter) enterGate(r *run, id int) bool {
	for {
		a.mu.Lock()
		ch, busy := r.gate[id]
		if !busy {
			r.gate[id] = make(chan struct{})
			return true
		}
		a.mu.Unlock()
		select {
		case <-ch:
		case <-r.done:
			return false
		case <-r.terminated:
			return false
		}
	}
}

// openGateLocked lets the next stop of thread id through. Callers hold a.mu.
func (r *run) openGateLocked(id int) {
	if ch, ok := r.gate[id]; ok {
		close(ch)
		delete(r.gate, id)
	}
}

// wake resumes the goroutine waiting as thread id (continuing for mode 0,
// else stepping), then opens the thread's gate. A stopped goroutine reports
// its event just before it starts waiting: the resume waits for it.
func (a *Adapter) wake(r *run, id int, mode interp.DebugEventReason) {
	defer func() {
		a.mu.Lock()
		r.openGateLocked(id)
		a.mu.Unlock()
	}()
	quit := []<-chan struct{}{r.done, r.terminated}
	if mode == 0 {
		if !resumeThread(r.dbg, id, true, quit...) {
			go func() { _ = r.dbg.Continue(id) }() // (it may block: not here)
		}
		return
	}
	// Step refuses while yaegi thinks the thread runs, which another
	// goroutine sharing the thread can make it think: set the mode, then
	// wake the thread.
	if r.dbg.Interrupt(id, mode) && resumeThread(r.dbg, id, false, quit...) {
		return
	}
	for i := 0; i < 100_000; i++ {
		err := r.dbg.Step(id, mode)
		if !errors.Is(err, interp.ErrRunning) {
			return
		}
		time.Sleep(20 * time.Microsecond)
	}
}

// thread finds the stopped thread a request for id is about (see the package
// documentation: JupyterLab asks for thread 1 only). Callers hold a.mu.
func (a *Adapter) thread(id int) (int, *stop, error) {
	if s, ok := a.stops[id]; ok {
		return id, s, nil
	}
	if ids := a.stopped(); len(ids) > 0 {
		return ids[0], a.stops[ids[0]], nil
	}
	if a.run == nil {
		return 0, nil, errNoRun
	}
	return 0, nil, fmt.Errorf("thread %d is not stopped", id)
}

func threadArg(args json.RawMessage) int {
	var in struct {
		ThreadID int `json:"threadId"`
	}
	_ = json.Unmarshal(args, &in)
	return in.ThreadID
}

// resume continues (mode 0) or steps a stopped thread.
func (a *Adapter) resume(args json.RawMessage, mode interp.DebugEventReason) reply {
	a.mu.Lock()
	id, s, err := a.thread(threadArg(args))
	r := a.run
	if err != nil || r == nil {
		a.mu.Unlock()
		if err == nil {
			err = errNoRun
		}
		return reply{err: err}
	}
	delete(a.stops, id)
	a.clearRefsLocked()
	if mode != 0 {
		r.stepping[id] = &step{mode: mode, from: s.at}
	}
	a.mu.Unlock()
	a.wake(r, id, mode)
	if mode == 0 {
		return reply{body: map[string]any{"allThreadsContinued": false}}
	}
	return reply{}
}

// pause stops every goroutine of the running cell at its next step.
func (a *Adapter) pause() reply {
	a.mu.Lock()
	r := a.run
	if r == nil {
		a.mu.Unlock()
		return reply{err: errNoRun}
	}
	for _, g := range r.dbg.GoRoutines() {
		if _, ok := a.stops[g.ID()]; ok {
			continue
		}
		// Land on cell code: stepping over code that is no cell's.
		r.stepping[g.ID()] = &step{mode: interp.DebugStepOver, from: location{file: "\x00"}, reason: "pause"}
		r.dbg.Interrupt(g.ID(), interp.DebugPause)
	}
	a.mu.Unlock()
	return reply{}
}

func (a *Adapter) threads() []any {
	a.mu.Lock()
	defer a.mu.Unlock()
	name := func(id int) string {
		if id == 1 {
			return "cell"
		}
		return "goroutine " + strconv.Itoa(id)
	}
	if a.run == nil {
		return []any{map[string]any{"id": 1, "name": name(1)}}
	}
	var out []any
	for _, g := range a.run.dbg.GoRoutines() {
		out = append(out, map[string]any{"id": g.ID(), "name": name(g.ID())})
	}
	if len(out) == 0 {
		out = []any{map[string]any{"id": 1, "name": name(1)}}
	}
	return out
}

func (a *Adapter) stackTrace(args json.RawMessage) reply {
	var in struct {
		ThreadID   int `json:"threadId"`
		StartFrame int `json:"startFrame"`
		Levels     int `json:"levels"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return reply{err: fmt.Errorf("stackTrace: %w", err)}
	}
	var out []any
	var total int
	var toWrite [][2]string
	err := func() error {
		a.mu.Lock()
		defer a.mu.Unlock()
		_, s, err := a.thread(in.ThreadID)
		if err != nil {
			return err
		}
		frames := s.ev.Frames(0, s.ev.FrameDepth())
		total = len(frames)
		if in.StartFrame > 0 {
			frames = frames[min(in.StartFrame, len(frames)):]
		}
		if in.Levels > 0 && in.Levels < len(frames) {
			frames = frames[:in.Levels]
		}
		out = make([]any, 0, len(frames))
		for _, f := range frames {
			a.nextRef++
			id := a.nextRef
			a.frames[id] = f
			p := f.Position()
			sf := map[string]any{"id": id, "name": frameName(f.Name(), p.Filename), "line": decodeLine(p.Line), "column": max(p.Column, 1)}
			if n := cellOf(p.Filename); n > 0 {
				if path := a.cellPath[n]; path != "" {
					sf["source"] = map[string]any{"name": "cell[" + strconv.Itoa(n) + "]", "path": path}
					toWrite = append(toWrite, [2]string{path, a.sources[path]})
				}
			}
			out = append(out, sf)
		}
		return nil
	}()
	if err != nil {
		return reply{err: err}
	}
	for _, w := range toWrite {
		_ = a.write(w[0], w[1]) // the frontend may open the file
	}
	return reply{body: map[string]any{"stackFrames": out, "totalFrames": total}}
}

// frameName names a frame as the panel shows it.
func frameName(name, file string) string {
	switch name {
	case rootFrame:
		if n := cellOf(file); n > 0 {
			return "cell[" + strconv.Itoa(n) + "]"
		}
		return "<cell>"
	case "<anonymous>", "<closure>":
		return "func literal"
	}
	return name
}

func (a *Adapter) scopes(args json.RawMessage) reply {
	var in struct {
		FrameID int `json:"frameId"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return reply{err: fmt.Errorf("scopes: %w", err)}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	f, ok := a.frames[in.FrameID]
	if !ok {
		return reply{err: fmt.Errorf("no frame %d (the thread ran on since)", in.FrameID)}
	}
	locals := a.newRefLocked(&ref{kind: refLocals, frame: f})
	globals := a.newRefLocked(&ref{kind: refGlobals})
	return reply{body: map[string]any{"scopes": []any{
		map[string]any{"name": "Locals", "variablesReference": locals, "expensive": false, "presentationHint": "locals"},
		map[string]any{"name": "Globals", "variablesReference": globals, "expensive": false},
	}}}
}
