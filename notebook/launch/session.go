package launch

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook/build"
	"github.com/goaccel/goaccel/notebook/compiled"
	"github.com/goaccel/goaccel/notebook/internal/session"
)

// Options configure a Session.
type Options struct {
	// Log is the session's declaration log.
	Log *session.Log
	// Compiled is the compiled runner; nil when cells are interpreted.
	Compiled Compiled
	// Interpreted is the interpreter runner, which interpreted launches
	// read the variables' values and types from.
	Interpreted Interpreted
	// Execute runs a worker's cells (the engine's Execute).
	Execute func(ctx context.Context, req frontend.ExecuteRequest, io frontend.CellIO) frontend.ExecuteReply
	// Note, when set, is told the name of each function about to be
	// launched (the debugger says that its breakpoints are not hit).
	Note func(fn string)
}

// Compiled is the compiled runner as launches see it (package
// compiledrunner).
type Compiled interface {
	// Session is the compiled session: the checker's declarations and
	// the variables' storage.
	Session() *compiled.Session
	// Builder builds cells; its state travels to the workers.
	Builder() *build.Builder
	// AutoImport resolves a package name cells use without importing it.
	AutoImport(name string) string
}

// Interpreted is the interpreter runner as launches see it (package
// yaegirunner).
type Interpreted interface {
	// Globals are the interpreter's global variables, by name.
	Globals() map[string]reflect.Value
	// TypeExpr returns a function that writes a type of an interpreted
	// value as Go source valid in a cell.
	TypeExpr() func(reflect.Type) (string, error)
}

// Session carries functions of the notebook to launched workers and their
// results back: in the kernel it is the launcher's launcher.Session, in a
// worker its launcher.WorkerRuntime. Its methods are safe for concurrent
// use.
type Session struct {
	opts Options

	mu    sync.Mutex
	fn    string  // name of the function being launched
	fnPtr uintptr // identifies the function value fn named
	// carried, results and resultErr are an interpreted worker's: the
	// values to restore, the encoded results, the function's error.
	carried   map[string][]byte
	results   [][]byte
	resultErr string
	// resultTypes are the result types of recently prepared compiled
	// launches.
	resultTypes []launchTypes
}

// New returns a session that carries what opts reach.
func New(opts Options) *Session { return &Session{opts: opts} }

// note tells Options.Note that fn is about to be launched.
func (s *Session) note(fn string) {
	if s.opts.Note != nil {
		s.opts.Note(fn)
	}
}

// launchPayload is what Prepare hands the workers.
type launchPayload struct {
	Func    string            `json:"func"`
	Imports []string          `json:"imports"`
	Decls   []string          `json:"decls"`
	Vars    []carriedVar      `json:"vars"`
	Params  []string          `json:"params"`  // parameter type expressions
	Results []string          `json:"results"` // result type expressions
	Args    []json.RawMessage `json:"args"`
	// Variadic marks a function whose last parameter is ...T (Params holds []T).
	Variadic bool `json:"variadic,omitempty"`
	// Build is the kernel's cell builder state: the session module and the
	// export data it knows (compiled cells; see prebuildWorker), so that
	// the workers import what the cells import, at the same versions.
	Build *build.State `json:"build,omitempty"`
}

type carriedVar struct {
	Name  string          `json:"name"`
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value,omitempty"`
}

// Name records that fn, about to be launched (the argument of a launcher
// call), is the function called name; it returns fn.
func (s *Session) Name(name string, fn any) any {
	s.mu.Lock()
	s.fn = name
	s.fnPtr = funcPointer(fn)
	s.mu.Unlock()
	return fn
}

// funcPointer identifies a function value (0 for anything else).
func funcPointer(fn any) uintptr {
	if v := reflect.ValueOf(fn); v.Kind() == reflect.Func {
		return v.Pointer()
	}
	return 0
}

// Prepare implements launcher.Session.
func (s *Session) Prepare(fn any, args []any) ([]byte, error) {
	if s.opts.Compiled != nil {
		return s.prepareCompiled(fn, args)
	}
	return s.prepareInterpreted(args)
}

// DecodeResults implements launcher.Session: results come back as JSON and
// are decoded into the declared result types when those are builtin types
// or composites of them; other types arrive as their JSON shape (maps,
// slices, float64).
func (s *Session) DecodeResults(payload []byte, rank int, encoded []byte) ([]any, error) {
	var p launchPayload
	if err := json.Unmarshal(payload, &p); err != nil {
		return nil, fmt.Errorf("reading the launch payload: %w", err)
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(encoded, &raw); err != nil {
		return nil, fmt.Errorf("rank %d sent unreadable results: %w", rank, err)
	}
	if outs := s.resultTypesOf(payload); outs != nil {
		return decodeCompiledResults(outs, rank, raw)
	}
	return decodeInterpreted(p, rank, raw)
}

// Run implements launcher.WorkerRuntime: in a worker process, rebuild the
// session from the payload and call the function.
func (s *Session) Run(ctx context.Context, payload []byte) ([]byte, error) {
	var p launchPayload
	if err := json.Unmarshal(payload, &p); err != nil {
		return nil, fmt.Errorf("reading the launch payload: %w", err)
	}
	if s.opts.Compiled != nil {
		return s.runCompiledWorker(ctx, p)
	}
	return s.runInterpreted(ctx, p)
}

// workerIO is a launched worker's CellIO: text goes to the process's stdout
// and stderr (pipes the launcher reads and prefixes), displays to the sink
// the worker runtime installed (forwarded to the kernel).
type workerIO struct {
	forward frontend.Publisher
}

func (w *workerIO) Stream(name, text string) {
	f := osStdout
	if name == "stderr" {
		f = osStderr
	}
	_, _ = f.WriteString(text)
}

func (w *workerIO) Display(data frontend.MIMEBundle, md map[string]any, id string) {
	if w.forward != nil {
		w.forward.Display(data, md, id)
	}
}

func (w *workerIO) UpdateDisplay(data frontend.MIMEBundle, md map[string]any, id string) {
	if w.forward != nil {
		w.forward.UpdateDisplay(data, md, id)
	}
}

func (w *workerIO) ClearOutput(wait bool) {
	if w.forward != nil {
		w.forward.ClearOutput(wait)
	}
}

func (w *workerIO) Input(context.Context, string, bool) (string, error) {
	return "", errors.New("stdin is not available in launched workers; read input in the notebook and pass it as an argument")
}

// launchTypes remembers the result types of the functions prepared for a
// launch, by payload, for DecodeResults (a few: launches do not nest
// deeply).
type launchTypes struct {
	sum  [sha256.Size]byte
	outs []reflect.Type
}

const keptLaunchTypes = 8

// rememberResultTypes records the result types of fn, launched with
// payload: the workers send results as JSON, and DecodeResults decodes them
// into these types (a cell's types exist only in this process).
func (s *Session) rememberResultTypes(payload []byte, fn any) {
	ft := reflect.TypeOf(fn)
	if ft == nil || ft.Kind() != reflect.Func {
		return
	}
	lt := launchTypes{sum: sha256.Sum256(payload)}
	for i := 0; i < ft.NumOut(); i++ {
		lt.outs = append(lt.outs, ft.Out(i))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resultTypes = append(s.resultTypes, lt)
	if len(s.resultTypes) > keptLaunchTypes {
		s.resultTypes = s.resultTypes[len(s.resultTypes)-keptLaunchTypes:]
	}
}

// resultTypesOf returns the result types recorded for payload, nil when
// none were (an interpreted launch).
func (s *Session) resultTypesOf(payload []byte) []reflect.Type {
	sum := sha256.Sum256(payload)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.resultTypes) - 1; i >= 0; i-- {
		if s.resultTypes[i].sum == sum {
			return s.resultTypes[i].outs
		}
	}
	return nil
}

// takeLaunchName returns the name the launching call gave fn. A name is
// used once, and only for the function value it came with: a launch of a
// value the call did not name (a closure, a variable) must not launch an
// earlier launch's function.
func (s *Session) takeLaunchName(fn any) (string, error) {
	s.mu.Lock()
	name, ptr := s.fn, s.fnPtr
	s.fn, s.fnPtr = "", 0
	s.mu.Unlock()
	if name == "" || ptr != funcPointer(fn) {
		return "", errors.New("the function to launch must be a function declared in a cell (func train(...) {...}), passed by its name")
	}
	return name, nil
}

// encodeArgs encodes a launch's arguments, the variadic tail packed as
// one slice.
func encodeArgs(name string, nparams int, variadic bool, args []any) ([]json.RawMessage, error) {
	if len(args) != nparams && !(variadic && len(args) >= nparams-1) {
		return nil, fmt.Errorf("%s takes %d argument(s), the launch passes %d", name, nparams, len(args))
	}
	if variadic {
		fixed := append([]any{}, args[:nparams-1]...)
		args = append(fixed, args[nparams-1:])
	}
	out := make([]json.RawMessage, 0, len(args))
	for i, a := range args {
		b, err := json.Marshal(a)
		if err != nil {
			return nil, fmt.Errorf("argument %d of %s (%T) cannot be carried to the workers: %w", i+1, name, a, err)
		}
		out = append(out, b)
	}
	return out, nil
}

// carryValue encodes v as JSON, or returns nil bytes when decoding them
// does not give v back.
func carryValue(v reflect.Value) ([]byte, error) {
	b, err := json.Marshal(v.Interface())
	if err != nil {
		return nil, err
	}
	back := reflect.New(v.Type())
	if err := json.Unmarshal(b, back.Interface()); err != nil || !reflect.DeepEqual(back.Elem().Interface(), v.Interface()) {
		return nil, nil
	}
	return b, nil
}
