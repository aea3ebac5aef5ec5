package commands

import (
	"context"
	"sync"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook/build"
	"github.com/goaccel/goaccel/notebook/gonb"
	"github.com/goaccel/goaccel/notebook/internal/session"
)

// Env is what commands ask of the engine.
type Env interface {
	// Write is output of the cell, in order with the rest of its output
	// (stream is "stdout" or "stderr"); Publish shows data under it.
	Write(stream string, p []byte)
	Publish(data frontend.MIMEBundle)
	// Flush hands on what the cell's code wrote so far.
	Flush()
	// Input asks the user for a line, as the cell's code would.
	Input(ctx context.Context, prompt string, password bool) (string, error)

	// Version is goaccel's version.
	Version() string
	// Declarations are the session's, in order; Values its variables.
	Declarations() []session.Declaration
	Values() []session.Var
	// Evaluate evaluates expr against the session (binding nothing).
	Evaluate(ctx context.Context, expr string) (any, *frontend.Error)
	// Reset forgets every declaration.
	Reset() error

	// Compiled is the compiled session; nil when cells are interpreted,
	// and Interpreted then says why.
	Compiled() Compiled
	Interpreted() string

	// GonbDir is where GoNB's pipes are (and $GONB_TMP_DIR when cells
	// are interpreted).
	GonbDir() string
	// Widgets connects the browser for gonbui's widgets; it reports
	// whether one connected. Heartbeat pings it.
	Widgets() bool
	Heartbeat() bool
	// KernelID names the kernel (%wasm's files are kept under it).
	KernelID() string
}

// Compiled is the compiled session, for the commands that need it.
type Compiled interface {
	// Builder builds cells and keeps the session module.
	Builder() *build.Builder
	// Resolve is the import path the session gives package name as src
	// uses it, or "".
	Resolve(ctx context.Context, name, src string) string
	// Forget makes the session forget a declaration; kind names it.
	Forget(name string) (kind string, ok bool)
	// Goroutines and Jobs describe what cells left running.
	Goroutines() string
	Jobs() string
	WaitJobs(ctx context.Context, progress func(string)) error
	// BuildValue builds src (one expression, written around cell
	// m.Cell's text) as Go code and returns its value; Call runs fn as
	// the cell's code runs. Their errors read as the cell's.
	BuildValue(ctx context.Context, src string, m Mapped) (any, *frontend.Error)
	Call(ctx context.Context, fn func(), m Mapped) *frontend.Error
}

// Mapped says where the lines of generated code were written: line i of
// it is line Lines[i] of cell Cell (0: none), whose text is Src.
type Mapped struct {
	Cell  int
	Src   string
	Lines []int
}

// Cell is one cell as its commands see it, and what they ask of the rest
// of it.
type Cell struct {
	// Src is the cell's text, Code its Go code (command lines blanked),
	// Count its execution count.
	Src, Code string
	Count     int
	// AllowStdin: the front end answers input requests.
	AllowStdin bool
	// Quiet: the cell has code or other commands besides the one that
	// runs, so %args sets the arguments without echoing them (as GoNB's
	// %args, which prints nothing); a cell of %args alone shows them.
	Quiet bool
	// Tee is the cell's output, which %capture copies to a file.
	Tee *Tee

	// Set by commands:
	// Time: time the cell's code (%time, %%time); Splices: code to run on
	// a command's line (%time CODE).
	Time    bool
	Splices []Splice
	// Timed: %%timeit ran the cell's code; it does not run again.
	Timed bool
	// Result is shown as the cell's result when its code has none.
	Result frontend.MIMEBundle
	// WithInputs, WithPassword: the next ! command reads what the user
	// types (GoNB's %with_inputs, %with_password).
	WithInputs, WithPassword bool
	// Test: run the session's tests after the cell's code (%test).
	Test *TestRequest
	// Wasm: the cell is compiled for the browser (%wasm).
	Wasm bool

	cmd   gonb.Command // the command that runs
	state *State
}

// Splice is code that runs on line Line of the cell.
type Splice struct {
	Line int
	Code string
}

// State is what commands keep between cells.
type State struct {
	mu      sync.Mutex
	goflags []string
	tracked []string
	wasm    *wasmTarget
}

// GoFlags are the flags %goflags set (for !*go build and %wasm).
func (s *State) GoFlags() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.goflags...)
}

// Track adds dir to the tracked folders (%track), once.
func (s *State) Track(dir string) {
	if dir == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tracked {
		if t == dir {
			return
		}
	}
	s.tracked = append(s.tracked, dir)
}
