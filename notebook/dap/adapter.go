package dap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"sync"

	"github.com/traefik/yaegi/interp"
)

// HashSeed is the murmur2 seed of cell file names (ipykernel's).
const HashSeed = 0xC70F6907

// LineBase separates the cell from the line in an encoded line (see
// EncodeLine): cells are shorter than LineBase lines.
const LineBase = 1_000_000

// EncodeLine is the line a //line directive gives line of cell in a program
// that holds code of several cells.
func EncodeLine(cell, line int) int { return cell*LineBase + line }

// decodeLine undoes EncodeLine (a plain line is returned as is).
func decodeLine(line int) int {
	if line >= LineBase {
		return line % LineBase
	}
	return line
}

// cellFile matches the position file name of cell N's code.
var cellFile = regexp.MustCompile(`^cell\[(\d+)\]/_\.go$`)

// cellOf is the cell a position file name belongs to (0: none).
func cellOf(filename string) int {
	m := cellFile.FindStringSubmatch(filename)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// Host is the notebook engine as the adapter sees it. Its methods are called
// on the goroutine that handles requests.
type Host interface {
	// Attached says that a client attached (on) or disconnected; it returns
	// a note for the client's console ("" for none).
	Attached(on bool) string
	// Globals lists the session's variables; it is called only while no
	// cell is stopped in the debugger.
	Globals(ctx context.Context) ([]Var, error)
	// Rich returns the MIME bundle the notebook would show for v.
	Rich(v reflect.Value) map[string]any
}

// Options configure an Adapter.
type Options struct {
	Host Host
	// Dir is where cell code is written for the frontend; empty means
	// <temp dir>/goaccel_<pid>.
	Dir string
	// TypeName names the type of an interpreted value as cells write it
	// ("" when it does not know); nil means reflect's names.
	TypeName func(reflect.Type) string
}

// Adapter is one kernel's debug adapter. Its methods are safe for
// concurrent use.
type Adapter struct {
	opts Options
	dir  string

	mu          sync.Mutex
	seq         int
	send        func(event []byte)
	attached    bool
	sources     map[string]string             // file → code
	cellPath    map[int]string                // cell → file of its code
	breakpoints map[string][]int              // file → lines
	rules       map[string]map[int]*breakRule // file → line → condition, hit count, log message
	programs    []program
	marked      map[*interp.Program][]reflect.Value // entry nodes given breakpoints (nodes.go)
	kinds       map[posKey]bpKind                   // which node of a statement a stop is on
	run         *run
	stops       map[int]*stop // stopped threads
	refs        map[int]*ref  // variablesReference → what it expands
	frames      map[int]*interp.DebugFrame
	nextRef     int
	copied      []Var // copyToGlobals values not yet in the session
}

// program is a compiled piece of cell code; cell 0 means encoded lines.
type program struct {
	prog *interp.Program
	cell int
}

// stop is a stopped thread.
type stop struct {
	ev     *interp.DebugEvent
	reason string
	at     location
}

// New makes an adapter.
func New(opts Options) *Adapter {
	dir := opts.Dir
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "goaccel_"+strconv.Itoa(os.Getpid()))
	}
	return &Adapter{
		opts: opts, dir: dir,
		sources: map[string]string{}, cellPath: map[int]string{}, breakpoints: map[string][]int{},
		rules: map[string]map[int]*breakRule{},
		stops: map[int]*stop{}, refs: map[int]*ref{}, frames: map[int]*interp.DebugFrame{},
		marked: map[*interp.Program][]reflect.Value{}, kinds: map[posKey]bpKind{},
	}
}

// SetEvents sets where events that no request caused go (stopped, thread,
// output): the kernel publishes them as debug_event.
func (a *Adapter) SetEvents(send func(event []byte)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.send = send
}

// Close removes the files written for the frontend.
func (a *Adapter) Close() error {
	if err := os.RemoveAll(a.dir); err != nil {
		return fmt.Errorf("debug: removing %s: %w", a.dir, err)
	}
	return nil
}

// Attached reports whether a client is attached.
func (a *Adapter) Attached() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.attached
}

// HasBreakpoints reports whether any breakpoint is set.
func (a *Adapter) HasBreakpoints() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, l := range a.breakpoints {
		if len(l) > 0 {
			return true
		}
	}
	return false
}

// BreakpointsIn reports whether a breakpoint is set on lines from..to of
// cell n's code.
func (a *Adapter) BreakpointsIn(n, from, to int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, l := range a.breakpoints[a.cellPath[n]] {
		if l >= from && l <= to {
			return true
		}
	}
	return false
}

// PathOf is the file the frontend knows code by.
func (a *Adapter) PathOf(code string) string {
	return filepath.Join(a.dir, strconv.FormatUint(uint64(murmur2([]byte(code), HashSeed)), 10)+".go")
}

// SetCellCode records the code of cell n (as the frontend sent it).
func (a *Adapter) SetCellCode(n int, code string) {
	p := a.PathOf(code)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cellPath[n] = p
	a.sources[p] = code
}

// AddProgram registers a program compiled from code of cell (0: several
// cells, lines encoded by EncodeLine), so breakpoints reach it.
func (a *Adapter) AddProgram(prog *interp.Program, cell int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.programs = append(a.programs, program{prog, cell})
	if a.run != nil {
		a.applyLocked(a.run, a.programs[len(a.programs)-1:])
	}
}

// ResetPrograms forgets the registered programs (the engine replaced its
// interpreter).
func (a *Adapter) ResetPrograms() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.programs = nil
	a.marked = map[*interp.Program][]reflect.Value{}
	a.kinds = map[posKey]bpKind{}
}

// TakeCopied returns and forgets the values copyToGlobals asked to become
// session variables.
func (a *Adapter) TakeCopied() []Var {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.copied
	a.copied = nil
	return c
}

// Output sends text to the client's console (an output event).
func (a *Adapter) Output(category, text string) {
	a.emit("output", map[string]any{"category": category, "output": text})
}

// message is a DAP request.
type message struct {
	Seq       int             `json:"seq"`
	Type      string          `json:"type"`
	Command   string          `json:"command"`
	Arguments json.RawMessage `json:"arguments"`
}

// reply is a response body or a failure.
type reply struct {
	body   any
	err    error
	events [][]byte
}

// errNotStopped and friends are refusals the client shows.
var (
	errNotAttached = errors.New("the debugger is not attached (send attach first)")
	errNoRun       = errors.New("no cell is running in the debugger")
)

// Handle answers one DAP request (a debug_request's content) with its
// response (the debug_reply's content) and the events to publish after it.
func (a *Adapter) Handle(ctx context.Context, raw []byte) (response []byte, events [][]byte) {
	var m message
	defer func() {
		if p := recover(); p != nil {
			response, events = a.respond(m, reply{err: fmt.Errorf("goaccel's debugger failed on %s: %v", m.Command, p)}), nil
		}
	}()
	if err := json.Unmarshal(raw, &m); err != nil {
		return a.respond(message{Command: "unknown"}, reply{err: fmt.Errorf("bad DAP request: %w", err)}), nil
	}
	if m.Type != "" && m.Type != "request" {
		return a.respond(m, reply{err: fmt.Errorf("a debug_request must hold a DAP request, not %q", m.Type)}), nil
	}
	if len(m.Arguments) == 0 || string(m.Arguments) == "null" {
		m.Arguments = json.RawMessage("{}")
	}
	r := a.dispatch(ctx, m)
	return a.respond(m, r), r.events
}

func (a *Adapter) dispatch(ctx context.Context, m message) reply {
	switch m.Command {
	case "initialize":
		return reply{body: capabilities()}
	case "attach":
		return a.attach()
	case "disconnect":
		return a.disconnect()
	case "configurationDone":
		return reply{}
	case "debugInfo":
		return reply{body: a.debugInfo()}
	case "dumpCell":
		return a.dumpCell(m.Arguments)
	case "source":
		return a.source(m.Arguments)
	case "setBreakpoints":
		return a.setBreakpoints(m.Arguments)
	case "setExceptionBreakpoints":
		return reply{body: map[string]any{"breakpoints": []any{}}}
	case "modules":
		return reply{body: map[string]any{"modules": []any{}, "totalModules": 0}}
	case "inspectVariables":
		return a.inspectVariables(ctx)
	case "richInspectVariables":
		return a.richInspect(ctx, m.Arguments)
	case "variables":
		return a.variables(ctx, m.Arguments)
	case "evaluate":
		return a.evaluateRequest(ctx, m.Arguments)
	}
	if !a.Attached() {
		switch m.Command {
		case "threads", "stackTrace", "scopes", "continue", "next", "stepIn", "stepOut", "pause", "copyToGlobals":
			return reply{err: errNotAttached}
		}
	}
	switch m.Command {
	case "threads":
		return reply{body: map[string]any{"threads": a.threads()}}
	case "stackTrace":
		return a.stackTrace(m.Arguments)
	case "scopes":
		return a.scopes(m.Arguments)
	case "continue":
		return a.resume(m.Arguments, 0)
	case "next":
		return a.resume(m.Arguments, interp.DebugStepOver)
	case "stepIn":
		return a.resume(m.Arguments, interp.DebugStepInto)
	case "stepOut":
		return a.resume(m.Arguments, interp.DebugStepOut)
	case "pause":
		return a.pause()
	case "copyToGlobals":
		return a.copyToGlobals(m.Arguments)
	}
	return reply{err: fmt.Errorf("goaccel's debugger does not support the %q request", m.Command)}
}

// capabilities is the initialize response's body.
func capabilities() map[string]any {
	return map[string]any{
		"supportsConfigurationDoneRequest":      true,
		"supportsEvaluateForHovers":             true,
		"supportsConditionalBreakpoints":        true,
		"supportsHitConditionalBreakpoints":     true,
		"supportsLogPoints":                     true,
		"supportsFunctionBreakpoints":           false,
		"supportsSetVariable":                   false,
		"supportsStepBack":                      false,
		"supportsRestartFrame":                  false,
		"supportsExceptionInfoRequest":          false,
		"supportsDelayedStackTraceLoading":      false,
		"supportsLoadedSourcesRequest":          false,
		"supportsTerminateRequest":              false,
		"supportsValueFormattingOptions":        false,
		"supportsExceptionOptions":              false,
		"supportsClipboardContext":              false,
		"supportsSteppingGranularity":           false,
		"supportsSingleThreadExecutionRequests": false,
		"exceptionBreakpointFilters":            []any{},
	}
}

func (a *Adapter) respond(m message, r reply) []byte {
	a.mu.Lock()
	a.seq++
	seq := a.seq
	a.mu.Unlock()
	resp := map[string]any{
		"seq": seq, "type": "response", "request_seq": m.Seq, "command": m.Command, "success": r.err == nil,
	}
	if r.err != nil {
		resp["message"] = r.err.Error()
		resp["body"] = map[string]any{"error": map[string]any{"id": 1, "format": r.err.Error(), "showUser": true}}
	} else if r.body != nil {
		resp["body"] = r.body
	} else {
		resp["body"] = map[string]any{}
	}
	b, err := json.Marshal(resp)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"seq": seq, "type": "response", "request_seq": m.Seq, "command": m.Command,
			"success": false, "message": "encoding the response: " + err.Error(), "body": map[string]any{}})
	}
	return b
}

// event encodes an event.
func (a *Adapter) event(name string, body any) []byte {
	a.mu.Lock()
	a.seq++
	seq := a.seq
	a.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"seq": seq, "type": "event", "event": name, "body": body})
	return b
}

// emit sends an event now.
func (a *Adapter) emit(name string, body any) {
	ev := a.event(name, body)
	a.mu.Lock()
	send := a.send
	a.mu.Unlock()
	if send != nil {
		send(ev)
	}
}

func (a *Adapter) attach() reply {
	a.mu.Lock()
	a.attached = true
	a.mu.Unlock()
	r := reply{events: [][]byte{a.event("initialized", map[string]any{})}}
	if a.opts.Host != nil {
		if note := a.opts.Host.Attached(true); note != "" {
			r.events = append(r.events, a.event("output", map[string]any{"category": "console", "output": note + "\n"}))
		}
	}
	return r
}

// disconnect detaches: breakpoints go, stopped threads run on.
func (a *Adapter) disconnect() reply {
	a.mu.Lock()
	was := a.attached
	a.attached = false
	a.breakpoints = map[string][]int{}
	a.rules = map[string]map[int]*breakRule{}
	r := a.run
	if r != nil {
		a.applyLocked(r, a.programs)
		for id := range r.stepping {
			delete(r.stepping, id)
		}
	}
	stopped := a.stopped()
	a.stops = map[int]*stop{}
	a.clearRefsLocked()
	a.mu.Unlock()
	if r != nil {
		for _, id := range stopped {
			a.wake(r, id, 0)
		}
	}
	if was && a.opts.Host != nil {
		if note := a.opts.Host.Attached(false); note != "" {
			a.Output("console", note+"\n")
		}
	}
	return reply{}
}

// stopped lists the stopped threads, lowest first. Callers hold a.mu.
func (a *Adapter) stopped() []int {
	ids := make([]int, 0, len(a.stops))
	for id := range a.stops {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	return ids
}

func (a *Adapter) debugInfo() map[string]any {
	a.mu.Lock()
	defer a.mu.Unlock()
	paths := make([]string, 0, len(a.breakpoints))
	for p, l := range a.breakpoints {
		if len(l) > 0 {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	bps := make([]any, 0, len(paths))
	for _, p := range paths {
		lines := make([]any, 0, len(a.breakpoints[p]))
		for _, l := range a.breakpoints[p] {
			lines = append(lines, map[string]any{"line": l})
		}
		bps = append(bps, map[string]any{"source": p, "breakpoints": lines})
	}
	return map[string]any{
		"isStarted":      a.attached,
		"hashMethod":     "Murmur2",
		"hashSeed":       HashSeed,
		"tmpFilePrefix":  a.dir + string(filepath.Separator),
		"tmpFileSuffix":  ".go",
		"breakpoints":    bps,
		"stoppedThreads": a.stopped(),
		"richRendering":  true,
		"exceptionPaths": []string{},
		"copyToGlobals":  true,
	}
}

func (a *Adapter) dumpCell(args json.RawMessage) reply {
	var in struct {
		Code string `json:"code"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return reply{err: fmt.Errorf("dumpCell: %w", err)}
	}
	p := a.PathOf(in.Code)
	if err := a.write(p, in.Code); err != nil {
		return reply{err: err}
	}
	return reply{body: map[string]any{"sourcePath": p}}
}

// write puts code in file p (under a.dir) and remembers it.
func (a *Adapter) write(p, code string) error {
	a.mu.Lock()
	a.sources[p] = code
	a.mu.Unlock()
	if err := os.MkdirAll(a.dir, 0o700); err != nil {
		return fmt.Errorf("debug: creating %s: %w", a.dir, err)
	}
	if err := os.WriteFile(p, []byte(code), 0o600); err != nil {
		return fmt.Errorf("debug: writing the cell's code: %w", err)
	}
	return nil
}

func (a *Adapter) source(args json.RawMessage) reply {
	var in struct {
		Source struct {
			Path string `json:"path"`
		} `json:"source"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return reply{err: fmt.Errorf("source: %w", err)}
	}
	a.mu.Lock()
	code, ok := a.sources[in.Source.Path]
	a.mu.Unlock()
	if !ok {
		return reply{err: fmt.Errorf("source unavailable: %s is not the code of a cell this kernel knows", in.Source.Path)}
	}
	return reply{body: map[string]any{"content": code, "mimeType": "text/x-go"}}
}

func (a *Adapter) setBreakpoints(args json.RawMessage) reply {
	var in struct {
		Source struct {
			Path string `json:"path"`
		} `json:"source"`
		Breakpoints []struct {
			Line         int    `json:"line"`
			Condition    string `json:"condition"`
			HitCondition string `json:"hitCondition"`
			LogMessage   string `json:"logMessage"`
		} `json:"breakpoints"`
		Lines []int `json:"lines"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return reply{err: fmt.Errorf("setBreakpoints: %w", err)}
	}
	var lines []int
	rules := map[int]*breakRule{}
	seen := map[int]bool{}
	out := make([]any, 0, len(in.Breakpoints))
	// reported adds the response's breakpoint for line, verified.
	reported := func(line int) map[string]any {
		bp := map[string]any{"id": len(out) + 1, "verified": true, "line": line, "source": map[string]any{"path": in.Source.Path}}
		out = append(out, bp)
		return bp
	}
	for _, b := range in.Breakpoints {
		bp := reported(b.Line)
		rule, err := newBreakRule(b.Condition, b.HitCondition, b.LogMessage)
		switch {
		case err != nil:
			bp["verified"], bp["message"] = false, err.Error()
		case b.Line <= 0:
			bp["verified"], bp["message"] = false, fmt.Sprintf("line %d is not a line of the cell", b.Line)
		case !seen[b.Line]:
			seen[b.Line] = true
			lines = append(lines, b.Line)
			if !rule.none() {
				rules[b.Line] = rule
			}
		}
	}
	if len(in.Breakpoints) == 0 {
		for _, l := range in.Lines {
			if l > 0 && !seen[l] {
				seen[l] = true
				lines = append(lines, l)
				reported(l)
			}
		}
	}
	a.mu.Lock()
	if len(lines) == 0 {
		delete(a.breakpoints, in.Source.Path)
	} else {
		a.breakpoints[in.Source.Path] = lines
	}
	if len(rules) == 0 {
		delete(a.rules, in.Source.Path)
	} else {
		a.rules[in.Source.Path] = rules
	}
	if a.run != nil {
		a.applyLocked(a.run, a.programs)
	}
	a.mu.Unlock()
	return reply{body: map[string]any{"breakpoints": out}}
}

// applyLocked sets the breakpoints of progs on the running interpreter.
// Callers hold a.mu.
func (a *Adapter) applyLocked(r *run, progs []program) {
	if r == nil || r.dbg == nil {
		return
	}
	for _, p := range progs {
		clearBreakpoints(a.marked[p.prog])
		delete(a.marked, p.prog)
		// LineBreakpoint(0) matches nothing; it makes SetBreakpoints clear
		// the program's earlier breakpoints even when no line is asked for.
		reqs := []interp.BreakpointRequest{interp.LineBreakpoint(0)}
		if p.cell > 0 {
			for _, l := range a.breakpoints[a.cellPath[p.cell]] {
				reqs = append(reqs, interp.LineBreakpoint(l))
			}
		} else {
			for n, path := range a.cellPath {
				for _, l := range a.breakpoints[path] {
					reqs = append(reqs, interp.LineBreakpoint(EncodeLine(n, l)))
				}
			}
		}
		if m := setBreakpoints(r, p.prog, reqs, a.kinds); len(m) > 0 {
			a.marked[p.prog] = m
		}
	}
}

// setBreakpoints sets a program's breakpoints (see applyLocked). yaegi
// generates the code of nodes it looks at and panics on programs it cannot
// run: their breakpoints are left out, and running them reports the error.
func setBreakpoints(r *run, prog *interp.Program, reqs []interp.BreakpointRequest, kinds map[posKey]bpKind) (marked []reflect.Value) {
	defer func() {
		if recover() != nil {
			marked = nil
		}
	}()
	set := r.dbg.SetBreakpoints(interp.ProgramBreakpointTarget(prog), reqs...)
	return entryBreakpoints(prog, r.it.FileSet(), set, kinds)
}
