package yaegirunner

import (
	"context"
	"fmt"
	"image"
	"io"
	"os"
	"reflect"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/traefik/yaegi/interp"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook/dap"
	"github.com/goaccel/goaccel/notebook/internal/session"
)

// Options configure a Runner.
type Options struct {
	// Packages are the compiled packages cells may import.
	Packages *Packages
	// Log, Output and Cells are the session's (see package session).
	Log    *session.Log
	Output *session.Output
	Cells  *session.Current
	// Launches receives what the runtime hooks of launches report.
	Launches Launches
	// CompiledUnavailable says why cells are not compiled, for the
	// messages that depend on it ("" when they are).
	CompiledUnavailable string
}

// Launches is where cells report to the launch payloads (package launch):
// the name of the function a launcher call is given, and, in a worker, the
// carried values and the launched function's results.
type Launches interface {
	// Name records that fn, about to be launched, is the function called
	// name; it returns fn.
	Name(name string, fn any) any
	// Decode fills ptr with the carried value called name.
	Decode(name string, ptr any)
	// Result records result i of the launched function.
	Result(i int, v any)
	// ResultErr records the error the launched function returned.
	ResultErr(msg string)
}

// Runner runs cells on one yaegi interpreter whose state lives across
// cells. It implements session.Runner; its methods are called by one
// engine, one cell at a time.
type Runner struct {
	opts  Options
	log   *session.Log
	out   *session.Output
	cells *session.Current

	mu    sync.RWMutex // guards the fields below
	it    *interp.Interpreter
	types map[string]string // type name → canonical definition
	saved *interp.Interpreter

	callDepth atomic.Int64 // nested calls of guarded cell functions (see guardRecursion)

	cs atomic.Pointer[cellState] // the current cell's state (see session.Current)

	stdin    *stdinReader
	stdinVar io.Reader // what cells see as os.Stdin

	probeMu    sync.Mutex
	probedType reflect.Type // answer of a type probe

	// the debugger (debug.go), while a debug session is active
	dbg      atomic.Pointer[dap.Adapter]
	progMu   sync.Mutex
	programs []program                               // programs compiled from cell code
	dbgNames atomic.Pointer[map[reflect.Type]string] // names of interpreted types
}

var _ session.Runner = (*Runner)(nil)

// program is a compiled piece of cell code, as the debugger registers it.
type program struct {
	prog *interp.Program
	cell int
}

// cellState is what the runtime hooks need to know about the running cell
// beyond session.Cell.
type cellState struct {
	cell *session.Cell

	mu       sync.Mutex
	result   frontend.MIMEBundle
	trace    []string
	goPanics []string
	// probeAnswer is what the hooks of askInterpreter's probes report
	// (_gxrt.Kind: a value's kind; _gxrt.Outs: a method's result count).
	probeAnswer string
}

func (cs *cellState) running() bool { return cs.cell.Running() }

func (cs *cellState) addTrace(line string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if len(cs.trace) < 200 {
		cs.trace = append(cs.trace, line)
	}
}

func (cs *cellState) takeTrace() []string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	t := cs.trace
	cs.trace = nil
	return t
}

func (cs *cellState) setResult(mime string, v any) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.result == nil {
		cs.result = frontend.MIMEBundle{}
	}
	cs.result[mime] = v
}

func (cs *cellState) takeResult() frontend.MIMEBundle {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	r := cs.result
	cs.result = nil
	return r
}

// answer records a probe's answer (see askInterpreter).
func (cs *cellState) answer(a string) {
	cs.mu.Lock()
	cs.probeAnswer = a
	cs.mu.Unlock()
}

// New starts a runner with a fresh interpreter.
func New(opts Options) (*Runner, error) {
	// The stack limit is process-wide; raise it (never lower it) so the
	// recursion guard, not a fatal overflow, ends endless recursion.
	if prev := debug.SetMaxStack(minMaxStack); prev > minMaxStack {
		debug.SetMaxStack(prev)
	}
	r := &Runner{opts: opts, log: opts.Log, out: opts.Output, cells: opts.Cells}
	r.stdin = &stdinReader{r: r}
	r.stdinVar = r.stdin
	r.cells.OnStart(r.startCell)
	if err := r.Reset(); err != nil {
		return nil, err
	}
	return r, nil
}

// startCell gives a cell that starts fresh state: an interrupted cell may
// not have run its deferred Leave calls, and buffered input is dropped.
func (r *Runner) startCell(c *session.Cell) {
	r.callDepth.Store(0)
	r.cs.Store(&cellState{cell: c})
	r.stdin.reset()
}

// Reset replaces the interpreter with a fresh one (%reset; the engine
// clears the log).
func (r *Runner) Reset() error {
	it, err := r.newInterpreter()
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.it = it
	r.types = map[string]string{}
	r.mu.Unlock()
	r.resetPrograms()
	return nil
}

// Close releases nothing: goroutines cells started cannot be stopped from
// outside and keep running until the process exits.
func (r *Runner) Close() error { return nil }

// newInterpreter makes an interpreter with the symbol tables and the
// prelude.
func (r *Runner) newInterpreter() (*interp.Interpreter, error) {
	it := interp.New(interp.Options{
		Stdin:        r.stdin,
		Stdout:       r.out.Writer("stdout"),
		Stderr:       stderrWriter{r: r},
		Unrestricted: true, // cells see the real environment
	})
	tables := append(r.opts.Packages.interpreted(), r.runtimeSymbols())
	for _, t := range tables {
		if err := it.Use(t); err != nil {
			return nil, fmt.Errorf("notebook: loading symbols: %w", err)
		}
	}
	if _, err := it.EvalWithContext(context.Background(), prelude); err != nil {
		return nil, fmt.Errorf("notebook: loading the prelude: %w", err)
	}
	return it, nil
}

// runtimeSymbols is the compiled side of the prelude: hooks bound to this
// runner.
func (r *Runner) runtimeSymbols() map[string]map[string]reflect.Value {
	l := r.opts.Launches
	return map[string]map[string]reflect.Value{
		rtPath + "/gxrt": {
			"Text":       reflect.ValueOf(func(s string) { r.withCell(func(cs *cellState) { cs.setResult("text/plain", s) }) }),
			"MIME":       reflect.ValueOf(func(mime, s string) { r.withCell(func(cs *cellState) { cs.setResult(mime, s) }) }),
			"Bytes":      reflect.ValueOf(func(mime string, b []byte) { r.withCell(func(cs *cellState) { cs.setResult(mime, encodeBase64(b)) }) }),
			"JSON":       reflect.ValueOf(func(v any) { r.withCell(func(cs *cellState) { setJSON(cs, v) }) }),
			"JSONText":   reflect.ValueOf(func(s string) { r.withCell(func(cs *cellState) { setJSONText(cs, s) }) }),
			"Image":      reflect.ValueOf(func(img image.Image) { r.withCell(func(cs *cellState) { setImage(cs, img) }) }),
			"GoPanic":    reflect.ValueOf(r.goPanic),
			"Clear":      reflect.ValueOf(clearValue),
			"Kind":       reflect.ValueOf(func(v any) { r.withCell(func(cs *cellState) { cs.answer(kindOf(v)) }) }),
			"LaunchName": reflect.ValueOf(l.Name),
			"TypeOf": reflect.ValueOf(func(v any) {
				r.probeMu.Lock()
				r.probedType = reflect.TypeOf(v)
				r.probeMu.Unlock()
			}),
			"Decode":    reflect.ValueOf(l.Decode),
			"Result":    reflect.ValueOf(l.Result),
			"ResultErr": reflect.ValueOf(l.ResultErr),
			"Enter":     reflect.ValueOf(r.enterCall),
			"Leave":     reflect.ValueOf(r.leaveCall),
			"Outs":      reflect.ValueOf(func(v any, method string) { r.withCell(func(cs *cellState) { cs.answer(methodOuts(v, method)) }) }),
		},
		"time/time": {
			// An interruptible time.Sleep (the compiled one cannot be
			// stopped, yaegi #386).
			"Sleep": reflect.ValueOf(r.sleep),
		},
		"os/os": {
			// os.Stdin reads the frontend's input. It is an io.Reader here,
			// not an *os.File (bufio.NewReader(os.Stdin), fmt.Fscan and
			// io.ReadAll work; os.Stdin.Fd() does not compile).
			"Stdin": reflect.ValueOf(&r.stdinVar).Elem(),
			// The process's os.Args (yaegi gives cells a copy), so that
			// %args reaches interpreted cells too.
			"Args": reflect.ValueOf(&os.Args).Elem(),
		},
	}
}

// interp is the current interpreter (%reset and the debugger replace it).
func (r *Runner) interp() *interp.Interpreter {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.it
}

// Globals are the interpreter's global variables, by name.
func (r *Runner) Globals() map[string]reflect.Value { return r.interp().Globals() }

// Values lists the session's variables (from the declaration log) with
// their values.
func (r *Runner) Values() []session.Var {
	g := r.Globals()
	var out []session.Var
	for _, n := range r.log.VarNames() {
		if v, ok := g[n]; ok && v.IsValid() {
			out = append(out, session.Var{Name: n, Value: v})
		}
	}
	return out
}

func (r *Runner) withCell(f func(cs *cellState)) {
	if cs := r.state(); cs != nil {
		f(cs)
	}
}

// state is the current cell's state, nil before the first cell.
func (r *Runner) state() *cellState { return r.cs.Load() }

// sleep is time.Sleep for cells: it returns early when the cell is
// interrupted.
func (r *Runner) sleep(d time.Duration) {
	if d <= 0 {
		runtime.Gosched()
		return
	}
	// Wake early only when the running cell is stopped (interrupt): its
	// context also ends when it finishes, and a goroutine it left running
	// must then keep sleeping its full time.
	var done <-chan struct{}
	if c := r.cells.Cell(); c != nil {
		done = c.Stopped
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-done:
	}
}

// goPanic reports a panic recovered in a goroutine a cell started.
func (r *Runner) goPanic(msg string) {
	cs := r.state()
	text := "panic in goroutine: " + msg
	if cs == nil {
		return
	}
	trace := cs.takeTrace()
	done := !cs.running()
	cs.mu.Lock()
	if !done {
		cs.goPanics = append(cs.goPanics, text)
		cs.trace = append(cs.trace, trace...)
	}
	cs.mu.Unlock()
	if !done {
		return // the cell's error reports it
	}
	var b strings.Builder
	b.WriteString(text + "\n")
	for _, l := range trace {
		b.WriteString("    " + mapPositions(l) + "\n")
	}
	b.WriteString("(the cell that started the goroutine had already ended; the kernel keeps running)\n")
	r.out.Stderr(b.String())
}

// GoPanicError is the error of panics that goroutines of interpreted cells
// reported while cell c ran (nil when none did).
func (r *Runner) GoPanicError(c *session.Cell) *frontend.Error {
	cs := r.state()
	if cs == nil || cs.cell != c {
		return nil
	}
	return goPanicError(cs)
}

// methodOuts reports, as text, how many results v's method returns when v
// is of a compiled type ("" when reflect cannot see the method, as for
// interpreted types).
func methodOuts(v any, method string) string {
	if v == nil {
		return ""
	}
	m := reflect.ValueOf(v).MethodByName(method)
	if !m.IsValid() {
		return ""
	}
	return strconv.Itoa(m.Type().NumOut())
}

// maxCallDepth bounds nested calls of cell functions that call cell
// functions: below what overflows a 4 GiB stack (minMaxStack), far above
// what real recursion in a notebook needs. GOACCEL_MAX_CALL_DEPTH changes it.
var maxCallDepth = func() int64 {
	if n, err := strconv.ParseInt(os.Getenv("GOACCEL_MAX_CALL_DEPTH"), 10, 64); err == nil && n > 0 {
		return n
	}
	return 100_000
}()

// minMaxStack is the goroutine stack limit New makes sure of: interpreted
// calls take 1–10 KiB of Go stack each, and the recursion guard must fire
// before the runtime's fatal stack overflow.
const minMaxStack = 4 << 30

// enterCall counts a guarded call. The count is shared by the goroutines of
// the session (Go gives no cheap per-goroutine counter); the limit is large
// enough for that. Past the limit it stops the cell the way an interrupt
// does: unwinding 200,000 frames by a panic takes yaegi minutes (its panic
// path is quadratic in the depth), cancelling takes half a second.
func (r *Runner) enterCall() {
	if r.callDepth.Add(1) <= maxCallDepth {
		return
	}
	r.callDepth.Add(-1)
	if c := r.cells.Cell(); c != nil && c.Running() {
		c.Stop(errTooDeep())
		return
	}
	panic(errTooDeep().Value)
}

func errTooDeep() *frontend.Error {
	return &frontend.Error{
		Name:  "RecursionError",
		Value: fmt.Sprintf("more than %d nested calls of notebook functions: endless recursion? The cell was stopped (a stack overflow would have ended the kernel); set GOACCEL_MAX_CALL_DEPTH to allow deeper recursion", maxCallDepth),
	}
}

func (r *Runner) leaveCall() { r.callDepth.Add(-1) }

// yaegiNoise matches what yaegi's log.Panic calls print to the process's
// stderr before panicking on code it cannot type (the panic itself becomes
// the cell's error).
var yaegiNoise = regexp.MustCompile(`(?m)^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d nil (reflect )?type\n`)

// StripNoise removes from p, text written to the process's stderr, what
// yaegi prints there on its own.
func StripNoise(p []byte) []byte { return yaegiNoise.ReplaceAll(p, nil) }
