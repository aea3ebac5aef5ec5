// Package launchertest provides what tests of the launcher (and of code
// built on it) need instead of the notebook engine: a Registry of compiled Go
// functions that implements launcher.Session and launcher.WorkerRuntime by
// carrying a function's registered name and its JSON-encoded arguments, a
// Main that makes a test binary its own worker executable, and an in-memory
// Publisher that records what reaches the cell.
//
// Typical use:
//
//	var reg = launchertest.New()
//
//	func TestMain(m *testing.M) {
//		reg.Register("train", train)
//		os.Exit(launchertest.Main(m, reg))
//	}
package launchertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime/debug"
	"strings"
	"sync"
	"testing"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/launcher"
)

// EnvWorker marks a re-executed test binary as a worker.
const EnvWorker = "GOACCEL_LAUNCHERTEST_WORKER"

// EnvPreflightFailRank makes Registry.Preflight fail on the rank it names.
const EnvPreflightFailRank = "GOACCEL_LAUNCHERTEST_PREFLIGHT_FAIL_RANK"

var errorType = reflect.TypeOf((*error)(nil)).Elem()

// Registry maps names to compiled functions. Register every function in
// both the test process and its workers (in TestMain, before Main).
type Registry struct {
	mu     sync.RWMutex
	byName map[string]reflect.Value
	byPtr  map[uintptr]string
}

// New returns an empty Registry.
func New() *Registry {
	return &Registry{byName: map[string]reflect.Value{}, byPtr: map[uintptr]string{}}
}

// Register records fn under name. Arguments and results must be
// JSON-encodable.
func (r *Registry) Register(name string, fn any) {
	v := reflect.ValueOf(fn)
	if v.Kind() != reflect.Func {
		panic(fmt.Sprintf("launchertest: Register(%q): %T is not a function", name, fn))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byName[name] = v
	r.byPtr[v.Pointer()] = name
}

type payload struct {
	Name string            `json:"name"`
	Args []json.RawMessage `json:"args"`
}

// Prepare implements launcher.Session.
func (r *Registry) Prepare(fn any, args []any) ([]byte, error) {
	v := reflect.ValueOf(fn)
	if v.Kind() != reflect.Func {
		return nil, fmt.Errorf("launchertest: %T is not a function", fn)
	}
	r.mu.RLock()
	name, ok := r.byPtr[v.Pointer()]
	r.mu.RUnlock()
	if !ok {
		return nil, errors.New("launchertest: function not registered")
	}
	p := payload{Name: name}
	for i, a := range args {
		b, err := json.Marshal(a)
		if err != nil {
			return nil, fmt.Errorf("launchertest: argument %d of %s cannot be carried: %w", i+1, name, err)
		}
		p.Args = append(p.Args, b)
	}
	return json.Marshal(p)
}

func (r *Registry) lookup(b []byte) (payload, reflect.Value, error) {
	var p payload
	if err := json.Unmarshal(b, &p); err != nil {
		return p, reflect.Value{}, fmt.Errorf("launchertest: bad payload: %w", err)
	}
	r.mu.RLock()
	fn, ok := r.byName[p.Name]
	r.mu.RUnlock()
	if !ok {
		return p, reflect.Value{}, fmt.Errorf("launchertest: no function %q in this process", p.Name)
	}
	return p, fn, nil
}

// Run implements launcher.WorkerRuntime.
func (r *Registry) Run(ctx context.Context, b []byte) (out []byte, err error) {
	p, fn, err := r.lookup(b)
	if err != nil {
		return nil, err
	}
	ft := fn.Type()
	if len(p.Args) != ft.NumIn() {
		return nil, fmt.Errorf("launchertest: %s takes %d arguments, got %d", p.Name, ft.NumIn(), len(p.Args))
	}
	in := make([]reflect.Value, len(p.Args))
	for i, raw := range p.Args {
		v := reflect.New(ft.In(i))
		if err := json.Unmarshal(raw, v.Interface()); err != nil {
			return nil, fmt.Errorf("launchertest: argument %d of %s: %w", i+1, p.Name, err)
		}
		in[i] = v.Elem()
	}
	defer func() {
		if rec := recover(); rec != nil {
			out, err = nil, &launcher.PanicError{Value: fmt.Sprint(rec), Stack: string(debug.Stack())}
		}
	}()
	res := fn.Call(in)
	if n := len(res); n > 0 && ft.Out(n-1) == errorType && !res[n-1].IsNil() {
		return nil, res[n-1].Interface().(error)
	}
	enc := make([]json.RawMessage, len(res))
	for i, v := range res {
		if ft.Out(i) == errorType {
			enc[i] = json.RawMessage("null")
			continue
		}
		b, err := json.Marshal(v.Interface())
		if err != nil {
			return nil, fmt.Errorf("launchertest: result %d of %s: %w", i+1, p.Name, err)
		}
		enc[i] = b
	}
	return json.Marshal(enc)
}

// DecodeResults implements launcher.Session.
func (r *Registry) DecodeResults(b []byte, rank int, encoded []byte) ([]any, error) {
	_, fn, err := r.lookup(b)
	if err != nil {
		return nil, err
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(encoded, &raws); err != nil {
		return nil, fmt.Errorf("launchertest: results of rank %d: %w", rank, err)
	}
	ft := fn.Type()
	if len(raws) != ft.NumOut() {
		return nil, fmt.Errorf("launchertest: rank %d returned %d results, want %d", rank, len(raws), ft.NumOut())
	}
	out := make([]any, len(raws))
	for i, raw := range raws {
		if ft.Out(i) == errorType {
			continue
		}
		v := reflect.New(ft.Out(i))
		if err := json.Unmarshal(raw, v.Interface()); err != nil {
			return nil, fmt.Errorf("launchertest: result %d of rank %d: %w", i+1, rank, err)
		}
		out[i] = v.Elem().Interface()
	}
	return out, nil
}

// Preflight implements launcher.Preflighter: it fails on the rank named by
// EnvPreflightFailRank.
func (r *Registry) Preflight(ctx context.Context) error {
	if want := os.Getenv(EnvPreflightFailRank); want != "" && want == os.Getenv("RANK") {
		return errors.New("launchertest: pre-flight check failed on purpose")
	}
	return nil
}

// Main is the body of TestMain. In a worker (EnvWorker set) it runs
// launcher.WorkerMain with r; otherwise it installs r as the session and
// this test binary as the worker command, and runs the tests.
func Main(m *testing.M, r *Registry) int {
	if os.Getenv(EnvWorker) == "1" {
		return launcher.WorkerMain(context.Background(), r)
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "launchertest:", err)
		return 2
	}
	defer launcher.SetSession(r)()
	defer launcher.SetWorkerCommand(launcher.WorkerCommand{Path: exe, Env: []string{EnvWorker + "=1"}})()
	return m.Run()
}

// Event is one call a Publisher received.
type Event struct {
	Kind string // "stream", "display", "update", "clear"
	Name string // stream name
	Text string
	Data frontend.MIMEBundle
	ID   string
	Wait bool
}

// Publisher records what reaches the cell. Safe for concurrent use.
type Publisher struct {
	mu     sync.Mutex
	events []Event
}

func (p *Publisher) add(e Event) {
	p.mu.Lock()
	p.events = append(p.events, e)
	p.mu.Unlock()
}

// Stream implements frontend.Publisher.
func (p *Publisher) Stream(name, text string) { p.add(Event{Kind: "stream", Name: name, Text: text}) }

// Display implements frontend.Publisher.
func (p *Publisher) Display(data frontend.MIMEBundle, _ map[string]any, id string) {
	p.add(Event{Kind: "display", Data: data, ID: id})
}

// UpdateDisplay implements frontend.Publisher.
func (p *Publisher) UpdateDisplay(data frontend.MIMEBundle, _ map[string]any, id string) {
	p.add(Event{Kind: "update", Data: data, ID: id})
}

// ClearOutput implements frontend.Publisher.
func (p *Publisher) ClearOutput(wait bool) { p.add(Event{Kind: "clear", Wait: wait}) }

// Events returns a copy of what was received.
func (p *Publisher) Events() []Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Event(nil), p.events...)
}

// Text returns everything streamed on name, concatenated.
func (p *Publisher) Text(name string) string {
	var b strings.Builder
	for _, e := range p.Events() {
		if e.Kind == "stream" && e.Name == name {
			b.WriteString(e.Text)
		}
	}
	return b.String()
}

// Lines returns the lines streamed on name.
func (p *Publisher) Lines(name string) []string {
	t := strings.TrimSuffix(p.Text(name), "\n")
	if t == "" {
		return nil
	}
	return strings.Split(t, "\n")
}
