package notebook

import (
	"context"
	"errors"
	"fmt"
	"image"
	"io"
	"os"
	"reflect"
	"regexp"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/traefik/yaegi/interp"
	"github.com/traefik/yaegi/stdlib"
	"github.com/traefik/yaegi/stdlib/unrestricted"

	"github.com/goaccel/goaccel/comm"
	"github.com/goaccel/goaccel/display"
	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/input"
	"github.com/goaccel/goaccel/launcher"
	"github.com/goaccel/goaccel/notebook/build"
	"github.com/goaccel/goaccel/notebook/compiled"
	"github.com/goaccel/goaccel/notebook/dap"
	"github.com/goaccel/goaccel/notebook/fdcapture"
	"github.com/goaccel/goaccel/notebook/gxrt"
)

// yaegiNoise matches what yaegi's log.Panic calls print to the process's
// stderr before panicking on code it cannot type (the panic itself becomes
// the cell's error).
var yaegiNoise = regexp.MustCompile(`(?m)^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d nil (reflect )?type\n`)

// Options configure an Engine.
type Options struct {
	// Capture, when set, is an active redirection of fds 1 and 2 (see
	// package fdcapture); the engine forwards what it captures to the
	// running cell. Without it, os.Stdout writes from cells go to the
	// process's real stdout.
	Capture *fdcapture.Capture
	// Symbols are extra compiled packages cells may import, in the shape of
	// stdlib.Symbols ("import/path/name" → symbol → value), e.g. the
	// tables of package symbols. display, input and the standard library
	// are always available.
	Symbols []map[string]map[string]reflect.Value
	// Version is reported in Info (the goaccel version).
	Version string
	// Interpret runs every cell on the interpreter instead of compiling
	// declarations with the Go toolchain.
	Interpret bool
	// BuildCache is where compiled cells are cached
	// (~/.cache/goaccel/build by default).
	BuildCache string
	// AlwaysBuild builds every cell with the toolchain, also the simple
	// ones (assignments, calls, a trailing expression) that are otherwise
	// evaluated without a build (package eval).
	AlwaysBuild bool
}

// DeclKind is the kind of a logged declaration.
type DeclKind string

// The kinds of declarations.
const (
	KindImport DeclKind = "import"
	KindType   DeclKind = "type"
	KindFunc   DeclKind = "func"
	KindMethod DeclKind = "method"
	KindConst  DeclKind = "const"
	KindVar    DeclKind = "var"
)

// Declaration is one entry of the declaration log: something a cell declared
// that succeeded. Replaying the log (imports first, then all other
// Declarations' Source as one file, which Go allows in any order) rebuilds a
// session's declarations without re-running statements.
type Declaration struct {
	Kind DeclKind
	// Name is the declared name; "T.M" for a method; the local name for an
	// import ("." or "_" for dot and blank imports).
	Name string
	// Names lists every name a var or const spec declares (`var a, b = 1, 2`).
	Names []string
	// Source is the declaration as written: "import \"fmt\"",
	// "func F() {...}", "type T struct{...}", "var x = 1". For a variable
	// defined by a statement (`x := f()`), Source is that statement and
	// FromStatement is true: replaying it would re-run f.
	Source        string
	FromStatement bool
	// Path is the import path (imports only).
	Path string
	// Cell is the execution count of the cell that declared it.
	Cell int
	// SrcCell, Line and Col locate Source's first byte: line and column in
	// the code of cell SrcCell (0 when unknown). The debugger replays
	// declarations at their positions so that breakpoints reach them.
	SrcCell, Line, Col int

	// results is how many results a KindFunc or KindMethod returns,
	// counted from the AST when it is logged, so that choosing how to show
	// a trailing call never re-parses Source.
	results int
}

// Engine runs Go notebook cells on one yaegi interpreter. Its methods are
// safe for concurrent use; Execute calls are serialized.
type Engine struct {
	opts Options

	execMu sync.Mutex // one Execute at a time

	mu      sync.RWMutex // guards the fields below
	it      *interp.Interpreter
	decls   []Declaration
	imports map[string]string                   // local name → path
	types   map[string]string                   // type name → canonical definition
	pkgName map[string]string                   // import path → package name (from the symbol tables)
	symtab  map[string]map[string]reflect.Value // import path → symbols

	autoOnce   sync.Once         // builds autoByName
	autoByName map[string]string // package name → path, for auto-import

	callDepth atomic.Int64 // nested calls of guarded cell functions (see guardRecursion)

	// launch state (see launch.go)
	launchMu   sync.Mutex
	launchFunc string // name of the function being launched
	// launchFuncPtr identifies the function value launchFunc named.
	launchFuncPtr uintptr
	probedType    reflect.Type      // answer of a type probe
	carried       map[string][]byte // worker: values to restore
	results       [][]byte          // worker: encoded results
	resultErr     string            // worker: the function's returned error
	// resultTypes are the result types of recently prepared compiled
	// launches (see launch_compiled.go).
	resultTypes []launchTypes
	closed      bool

	// compiled cells (see compiledcell.go); comp is nil when they are
	// unavailable, compErr says why.
	builder *build.Builder
	comp    *compiled.Session
	compErr error
	// interpNoted: the user was told that cells are interpreted.
	interpNoted bool
	// workDone is set once a go.work beside the notebook was looked for
	// (before the first compiled cell; Execute calls are serialized).
	workDone bool
	// evaluated counts the cells that ran without a build.
	evaluated int

	out      *streamer
	stdin    *stdinReader
	stdinVar io.Reader // what cells see as os.Stdin

	cellMu sync.Mutex
	cell   *cellState // running cell, or the last one that ran

	// the debugger (debugging.go, debugsync.go)
	dbg      *dap.Adapter
	dbgState debugState                              // guarded by execMu
	dbgNames atomic.Pointer[map[reflect.Type]string] // names of interpreted types
}

// cellState is what the runtime hooks need to know about the running cell.
type cellState struct {
	ctx        context.Context
	cancel     context.CancelFunc // stops the cell (interrupt, recursion guard)
	stopped    chan struct{}      // closed when the cell is stopped while running
	io         frontend.CellIO
	allowStdin bool
	count      int

	mu       sync.Mutex
	done     bool
	result   frontend.MIMEBundle
	trace    []string
	goPanics []string
	// probeAnswer is what the hooks of askInterpreter's probes report
	// (_gxrt.Kind: a value's kind; _gxrt.Outs: a method's result count).
	probeAnswer string
	// tooDeep is set when the recursion guard stopped the cell.
	tooDeep atomic.Bool
}

func (cs *cellState) running() bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return !cs.done
}

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

// ask requests a line of input from the frontend for this cell.
func (cs *cellState) ask(prompt string, password bool) (string, error) {
	if !cs.allowStdin {
		return "", errStdin(frontend.ErrStdinNotAllowed)
	}
	s, err := cs.io.Input(cs.ctx, prompt, password)
	if err != nil {
		return "", errStdin(err)
	}
	return s, nil
}

// New starts an engine with a fresh interpreter.
func New(opts Options) (*Engine, error) {
	// The stack limit is process-wide; raise it (never lower it) so the
	// recursion guard, not a fatal overflow, ends endless recursion.
	if prev := debug.SetMaxStack(minMaxStack); prev > minMaxStack {
		debug.SetMaxStack(prev)
	}
	e := &Engine{opts: opts, out: newStreamer()}
	e.dbg = dap.New(dap.Options{Host: debugHost{e}, TypeName: e.debugTypeName})
	e.stdin = &stdinReader{e: e}
	e.stdinVar = e.stdin
	if err := e.reset(); err != nil {
		return nil, err
	}
	e.startCompiled()
	// Cells see a program started without arguments, as go run starts it,
	// not the kernel's command line (%args gives them some).
	setArgs(nil)
	if opts.Capture != nil {
		opts.Capture.SetOutput(func(stream string, p []byte) {
			if stream == "stderr" {
				p = yaegiNoise.ReplaceAll(p, nil)
			}
			e.out.write(stream, p)
		})
	}
	return e, nil
}

// reset replaces the interpreter with a fresh one and clears the log.
func (e *Engine) reset() error {
	it, pkgName, symtab, err := e.newInterpreter()
	if err != nil {
		return err
	}
	if e.comp != nil {
		e.comp.Reset()
	}
	e.mu.Lock()
	e.it = it
	e.decls = nil
	e.imports = map[string]string{}
	e.types = map[string]string{}
	e.pkgName = pkgName
	e.symtab = symtab
	e.mu.Unlock()
	if e.dbg != nil {
		e.dbg.ResetPrograms()
	}
	return nil
}

// newInterpreter makes an interpreter with the symbol tables and the
// prelude, and returns the package names and symbols it knows.
func (e *Engine) newInterpreter() (*interp.Interpreter, map[string]string, map[string]map[string]reflect.Value, error) {
	it := interp.New(interp.Options{
		Stdin:        e.stdin,
		Stdout:       streamWriter{s: e.out, name: "stdout"},
		Stderr:       stderrWriter{e: e},
		Unrestricted: true, // cells see the real environment
	})
	pkgName := map[string]string{}
	symtab := map[string]map[string]reflect.Value{}
	use := func(x map[string]map[string]reflect.Value) error {
		for k, syms := range x {
			if i := strings.LastIndex(k, "/"); i > 0 {
				pkgName[k[:i]] = k[i+1:]
				if symtab[k[:i]] == nil {
					symtab[k[:i]] = map[string]reflect.Value{}
				}
				for n, v := range syms {
					symtab[k[:i]][n] = v
				}
			}
		}
		if err := it.Use(x); err != nil {
			return fmt.Errorf("notebook: loading symbols: %w", err)
		}
		return nil
	}
	// stdlib.Symbols is the restricted standard library: os.Exit and
	// log.Fatal panic instead of exiting. Take only os/exec from the
	// unrestricted table (it would bring back the real os.Exit).
	tables := []map[string]map[string]reflect.Value{
		stdlib.Symbols,
		{"os/exec/exec": unrestricted.Symbols["os/exec/exec"]},
		cellPackages(),
		e.runtimeSymbols(),
	}
	tables = append(tables, e.opts.Symbols...)
	for _, t := range tables {
		if err := use(t); err != nil {
			return nil, nil, nil, err
		}
	}
	if _, err := it.EvalWithContext(context.Background(), prelude); err != nil {
		return nil, nil, nil, fmt.Errorf("notebook: loading the prelude: %w", err)
	}
	return it, pkgName, symtab, nil
}

// runtimeSymbols is the compiled side of the prelude: hooks bound to this
// engine.
func (e *Engine) runtimeSymbols() map[string]map[string]reflect.Value {
	return map[string]map[string]reflect.Value{
		rtPath + "/gxrt": {
			"Text":       reflect.ValueOf(func(s string) { e.withCell(func(cs *cellState) { cs.setResult("text/plain", s) }) }),
			"MIME":       reflect.ValueOf(func(mime, s string) { e.withCell(func(cs *cellState) { cs.setResult(mime, s) }) }),
			"Bytes":      reflect.ValueOf(func(mime string, b []byte) { e.withCell(func(cs *cellState) { cs.setResult(mime, encodeBase64(b)) }) }),
			"JSON":       reflect.ValueOf(func(v any) { e.withCell(func(cs *cellState) { setJSON(cs, v) }) }),
			"JSONText":   reflect.ValueOf(func(s string) { e.withCell(func(cs *cellState) { setJSONText(cs, s) }) }),
			"Image":      reflect.ValueOf(func(img image.Image) { e.withCell(func(cs *cellState) { setImage(cs, img) }) }),
			"GoPanic":    reflect.ValueOf(e.goPanic),
			"Clear":      reflect.ValueOf(clearValue),
			"Kind":       reflect.ValueOf(func(v any) { e.withCell(func(cs *cellState) { cs.answer(kindOf(v)) }) }),
			"LaunchName": reflect.ValueOf(e.launchName),
			"TypeOf": reflect.ValueOf(func(v any) {
				e.launchMu.Lock()
				e.probedType = reflect.TypeOf(v)
				e.launchMu.Unlock()
			}),
			"Decode":    reflect.ValueOf(e.decodeCarried),
			"Result":    reflect.ValueOf(e.setLaunchResult),
			"ResultErr": reflect.ValueOf(e.setLaunchErr),
			"Enter":     reflect.ValueOf(e.enterCall),
			"Leave":     reflect.ValueOf(e.leaveCall),
			"Outs":      reflect.ValueOf(func(v any, method string) { e.withCell(func(cs *cellState) { cs.answer(methodOuts(v, method)) }) }),
		},
		"time/time": {
			// An interruptible time.Sleep (the compiled one cannot be
			// stopped, yaegi #386).
			"Sleep": reflect.ValueOf(e.sleep),
		},
		"os/os": {
			// os.Stdin reads the frontend's input. It is an io.Reader here,
			// not an *os.File (bufio.NewReader(os.Stdin), fmt.Fscan and
			// io.ReadAll work; os.Stdin.Fd() does not compile).
			"Stdin": reflect.ValueOf(&e.stdinVar).Elem(),
			// The process's os.Args (yaegi gives cells a copy), so that
			// %args reaches interpreted cells too.
			"Args": reflect.ValueOf(&os.Args).Elem(),
		},
	}
}

// interp is the current interpreter (%reset replaces it).
func (e *Engine) interp() *interp.Interpreter {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.it
}

func (e *Engine) withCell(f func(cs *cellState)) {
	if cs := e.currentCell(); cs != nil {
		f(cs)
	}
}

func (e *Engine) currentCell() *cellState {
	e.cellMu.Lock()
	defer e.cellMu.Unlock()
	return e.cell
}

// sleep is time.Sleep for cells: it returns early when the cell is
// interrupted.
func (e *Engine) sleep(d time.Duration) {
	if d <= 0 {
		runtime.Gosched()
		return
	}
	// Wake early only when the running cell is stopped (interrupt): its
	// context also ends when it finishes, and a goroutine it left running
	// must then keep sleeping its full time.
	var done <-chan struct{}
	if cs := e.currentCell(); cs != nil && cs.stopped != nil {
		done = cs.stopped
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-done:
	}
}

// goPanic reports a panic recovered in a goroutine a cell started.
func (e *Engine) goPanic(msg string) {
	cs := e.currentCell()
	text := "panic in goroutine: " + msg
	if cs == nil {
		return
	}
	trace := cs.takeTrace()
	cs.mu.Lock()
	done := cs.done
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
	e.out.write("stderr", []byte(b.String()))
}

// Info describes the language for kernel_info_reply.
func (e *Engine) Info() (frontend.LanguageInfo, string, []frontend.HelpLink) {
	v := strings.TrimPrefix(runtime.Version(), "go")
	banner := "goaccel " + e.opts.Version + " — Go " + v + " cells on yaegi v0.16.1 (type %help for magics)"
	return frontend.LanguageInfo{
			Name:              "go",
			Version:           v,
			MIMEType:          "text/x-go",
			FileExtension:     ".go",
			PygmentsLexer:     "go",
			CodeMirrorMode:    "go",
			NBConvertExporter: "script",
		}, banner, []frontend.HelpLink{
			{Text: "Go documentation", URL: "https://go.dev/doc/"},
			{Text: "Go standard library", URL: "https://pkg.go.dev/std"},
			{Text: "yaegi", URL: "https://github.com/traefik/yaegi"},
		}
}

// Close releases the engine. Goroutines cells started cannot be stopped
// from outside and keep running until the process exits.
func (e *Engine) Close() error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	if e.opts.Capture != nil {
		e.opts.Capture.SetOutput(nil)
	}
	err := e.dbg.Close()
	if e.builder != nil {
		if berr := e.builder.Close(); berr != nil {
			return berr
		}
	}
	return err
}

// Declarations returns a copy of the declaration log, oldest first; a name
// declared again appears once, at its latest position.
func (e *Engine) Declarations() []Declaration {
	e.mu.RLock()
	defer e.mu.RUnlock()
	out := make([]Declaration, len(e.decls))
	copy(out, e.decls)
	for i := range out {
		out[i].Names = append([]string(nil), out[i].Names...)
	}
	return out
}

// Imports maps the local name of each package imported by cells to its path.
func (e *Engine) Imports() map[string]string {
	e.mu.RLock()
	defer e.mu.RUnlock()
	m := make(map[string]string, len(e.imports))
	for k, v := range e.imports {
		m[k] = v
	}
	return m
}

// logDecl appends d, dropping an earlier declaration of the same name and
// kind family. Callers hold e.mu.
func (e *Engine) logDecl(d Declaration) {
	family := func(k DeclKind) string {
		switch k {
		case KindImport:
			return "import"
		case KindMethod:
			return "method"
		default:
			return "value" // func, var, const and type share one namespace
		}
	}
	kept := e.decls[:0]
	for _, old := range e.decls {
		if old.Name == d.Name && family(old.Kind) == family(d.Kind) && !(d.Kind == KindImport && d.Name == "_") {
			continue
		}
		kept = append(kept, old)
	}
	e.decls = append(kept, d)
}

// hasName reports whether the log declares name (any kind but import).
func (e *Engine) hasName(name string) bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	for _, d := range e.decls {
		if d.Kind == KindImport || d.Kind == KindMethod {
			continue
		}
		if d.Name == name {
			return true
		}
		for _, n := range d.Names {
			if n == name {
				return true
			}
		}
	}
	return false
}

// Execute runs one cell; see the package documentation.
func (e *Engine) Execute(ctx context.Context, req frontend.ExecuteRequest, cio frontend.CellIO) (reply frontend.ExecuteReply) {
	e.execMu.Lock()
	defer e.execMu.Unlock()
	e.mu.RLock()
	closed := e.closed
	e.mu.RUnlock()
	if closed {
		return frontend.ExecuteReply{Err: &frontend.Error{Name: "EngineClosed", Value: "the Go engine was closed"}}
	}
	// An interrupted cell may not have run its deferred Leave calls.
	e.callDepth.Store(0)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cs := &cellState{ctx: ctx, cancel: cancel, io: cio, allowStdin: req.AllowStdin, count: req.ExecutionCount,
		stopped: make(chan struct{})}
	finished := make(chan struct{})
	defer close(finished)
	go func() { // stopped closes when the cell is stopped while it runs
		select {
		case <-ctx.Done():
			if cs.running() {
				close(cs.stopped)
			}
		case <-finished:
		}
	}()
	e.cellMu.Lock()
	e.cell = cs
	e.cellMu.Unlock()
	e.stdin.reset()
	gxrt.ResetStdin()
	e.out.setDest(cio)
	restoreDisplay := display.SetSink(orderedSink{cio, e.flushOutput})
	restoreInput := input.SetSource(cs.ask)
	restoreLaunch := launcher.SetCell(ctx, orderedSink{cio, e.flushOutput})
	defer func() {
		if cs.tooDeep.Load() && reply.Err != nil && reply.Err.Name == "Interrupted" {
			reply.Err = errTooDeep()
		}
	}()
	defer func() {
		if r := recover(); r != nil {
			reply = frontend.ExecuteReply{Err: &frontend.Error{
				Name:      "InternalError",
				Value:     fmt.Sprintf("goaccel: internal error: %v", r),
				Traceback: strings.Split(string(debugStack()), "\n"),
			}}
		}
		e.flushOutput()
		restoreLaunch()
		restoreInput()
		restoreDisplay()
		cs.mu.Lock()
		cs.done = true
		cs.mu.Unlock()
	}()

	if req.ExecutionCount > 0 {
		e.dbg.SetCellCode(req.ExecutionCount, req.Code)
	}
	magics, code := splitMagics(req.Code)
	timed := false
	for _, m := range magics {
		res, err := e.runMagic(ctx, cs, m)
		if err != nil {
			return frontend.ExecuteReply{Err: err}
		}
		reply.Payload = append(reply.Payload, res.payload...)
		if res.time {
			timed = true
		}
		if res.code != "" {
			code = spliceLine(code, m.Line, res.code)
		}
	}
	start := time.Now()
	if strings.TrimSpace(code) != "" {
		if name, detail, ok := helpRequest(code); ok {
			if p := e.help(name, detail); p != nil {
				reply.Payload = append(reply.Payload, p)
			} else {
				cio.Stream("stdout", fmt.Sprintf("Object `%s` not found.\n", name))
			}
		} else {
			res, err := e.runCell(ctx, cs, code)
			if err != nil {
				if timed {
					e.out.write("stdout", []byte(fmt.Sprintf("Wall time: %v\n", roundDuration(time.Since(start)))))
				}
				return frontend.ExecuteReply{Err: err, Payload: reply.Payload}
			}
			reply.Result = res
		}
	}
	if timed {
		e.out.write("stdout", []byte(fmt.Sprintf("Wall time: %v\n", roundDuration(time.Since(start)))))
	}
	if len(req.UserExpressions) > 0 {
		reply.UserExpressions = e.userExpressions(ctx, cs, req.UserExpressions)
	}
	if req.Silent {
		reply.Result = nil
	}
	return reply
}

func roundDuration(d time.Duration) time.Duration {
	switch {
	case d > time.Second:
		return d.Round(time.Millisecond)
	case d > time.Millisecond:
		return d.Round(time.Microsecond)
	}
	return d
}

// userExpressions evaluates each expression inside the interpreter.
func (e *Engine) userExpressions(ctx context.Context, cs *cellState, exprs map[string]string) map[string]any {
	out := make(map[string]any, len(exprs))
	keys := make([]string, 0, len(exprs))
	for k := range exprs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		res, err := e.evalExpr(ctx, cs, exprs[k])
		if err != nil {
			out[k] = map[string]any{"status": "error", "ename": err.Name, "evalue": err.Value, "traceback": nonNil(err.Traceback)}
			continue
		}
		if res == nil {
			res = frontend.MIMEBundle{}
		}
		out[k] = map[string]any{"status": "ok", "data": res, "metadata": map[string]any{}}
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// errInterrupted is the error of an interrupted cell.
func errInterrupted() *frontend.Error {
	return &frontend.Error{
		Name:      "Interrupted",
		Value:     "interrupted by the user; the state of earlier cells is kept",
		Traceback: []string{"Interrupted: the cell was stopped by an interrupt (variables and declarations of earlier cells are kept)"},
	}
}

func isCtxErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// getenvOr is os.Getenv with a default.
func getenvOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// spliceLine replaces line n (1-based) of code with text.
func spliceLine(code string, n int, text string) string {
	lines := strings.Split(code, "\n")
	if n < 1 || n > len(lines) {
		return code
	}
	lines[n-1] = text
	return strings.Join(lines, "\n")
}

// SetComms lets cells serve Jupyter comms through package comm
// (kernel.CommUser).
func (e *Engine) SetComms(c frontend.Comms) { comm.SetRegistry(c) }

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

// orderedSink is the display sink of a running cell: it sends pending
// stream text before each display message, so output appears in the order
// the cell produced it.
type orderedSink struct {
	frontend.CellIO
	flush func()
}

func (o orderedSink) Display(data frontend.MIMEBundle, md map[string]any, id string) {
	o.flush()
	o.CellIO.Display(data, md, id)
}

func (o orderedSink) UpdateDisplay(data frontend.MIMEBundle, md map[string]any, id string) {
	o.flush()
	o.CellIO.UpdateDisplay(data, md, id)
}

func (o orderedSink) ClearOutput(wait bool) {
	o.flush()
	o.CellIO.ClearOutput(wait)
}

// flushOutput sends everything the cell wrote so far: what compiled code
// wrote to fds 1/2, drained from the capture pipes (the rest of the cell's
// output goes straight to the CellIO).
func (e *Engine) flushOutput() {
	if e.opts.Capture != nil {
		e.opts.Capture.Drain(50 * time.Millisecond)
	}
}

// answer records a probe's answer (see askInterpreter).
func (cs *cellState) answer(a string) {
	cs.mu.Lock()
	cs.probeAnswer = a
	cs.mu.Unlock()
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
func (e *Engine) enterCall() {
	if e.callDepth.Add(1) <= maxCallDepth {
		return
	}
	e.callDepth.Add(-1)
	if cs := e.currentCell(); cs != nil && cs.running() && cs.cancel != nil {
		cs.tooDeep.Store(true)
		cs.cancel()
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

func (e *Engine) leaveCall() { e.callDepth.Add(-1) }
