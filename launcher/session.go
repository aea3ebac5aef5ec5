package launcher

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/goaccel/goaccel/display"
	"github.com/goaccel/goaccel/frontend"
)

// Session carries a cell's function to the workers. The notebook engine
// installs one in the kernel process with SetSession; launches of more than
// one process need it (a single process runs the function in place).
// Implementations must be safe for concurrent use.
type Session interface {
	// Prepare captures fn (a function value of the running session) and
	// its arguments as an opaque payload that WorkerRuntime.Run in a fresh
	// worker process can replay: which function, the declarations to
	// replay, the values of the global variables, the encoded arguments.
	// It fails, before any worker starts, with an error that names what
	// cannot be carried (e.g. a global variable holding a channel).
	Prepare(fn any, args []any) (payload []byte, err error)
	// DecodeResults turns what WorkerRuntime.Run returned in the worker of
	// the given rank (global rank) for payload back into the function's
	// return values, one element per result, in order.
	DecodeResults(payload []byte, rank int, encoded []byte) ([]any, error)
}

// WorkerRuntime runs the payload in a worker process; the notebook engine
// implements it and hands it to WorkerMain.
type WorkerRuntime interface {
	// Run replays payload (from Session.Prepare) in a fresh interpreter and
	// calls the function with its arguments. It returns the encoded return
	// values, for Session.DecodeResults. When the function panics, Run
	// returns a *PanicError (value and traceback); when its last result is
	// a non-nil error, Run returns that error (its text is shown to the
	// user). ctx is cancelled when the cell is interrupted.
	Run(ctx context.Context, payload []byte) (encodedResults []byte, err error)
}

// Preflighter is optionally implemented by a WorkerRuntime: in the debug
// pre-flight (ACCELERATE_DEBUG_MODE), after the worker has joined the
// process group, Preflight checks that the worker can run (devices, imports)
// without running the user's function.
type Preflighter interface {
	Preflight(ctx context.Context) error
}

// The process-wide installation points. They are process-wide for the
// reason display's sink is: the cell calls NotebookLauncher without passing
// anything but its function.
var (
	cellMu      sync.RWMutex
	curSession  Session
	curCellCtx  context.Context
	curCellPub  frontend.Publisher
	workerCmd   = defaultWorkerCommand
	workerCmdMu sync.RWMutex
)

// SetSession installs the session that carries functions to the workers and
// returns a function that restores the previous one. The notebook engine
// calls it once it has a session (and again after a kernel restart).
func SetSession(s Session) (restore func()) {
	cellMu.Lock()
	prev := curSession
	curSession = s
	cellMu.Unlock()
	return func() {
		cellMu.Lock()
		curSession = prev
		cellMu.Unlock()
	}
}

// SetCell installs the running cell, the way display.SetSink installs its
// sink: ctx is cancelled when the cell is interrupted (NotebookLauncher and
// DebugLauncher, which take no context, use it) and pub receives what the
// workers print and display (the engine passes the cell's Publisher, the
// value it gives display.SetSink). It returns a function that restores the
// previous cell. A nil ctx means context.Background(); with a nil pub,
// worker output goes to os.Stdout/os.Stderr and worker displays through the
// display package.
func SetCell(ctx context.Context, pub frontend.Publisher) (restore func()) {
	cellMu.Lock()
	prevCtx, prevPub := curCellCtx, curCellPub
	curCellCtx, curCellPub = ctx, pub
	cellMu.Unlock()
	return func() {
		cellMu.Lock()
		curCellCtx, curCellPub = prevCtx, prevPub
		cellMu.Unlock()
	}
}

func currentSession() Session {
	cellMu.RLock()
	defer cellMu.RUnlock()
	return curSession
}

// CellContext returns the context of the running cell installed with
// SetCell, or context.Background() when none is.
func CellContext() context.Context {
	cellMu.RLock()
	defer cellMu.RUnlock()
	if curCellCtx == nil {
		return context.Background()
	}
	return curCellCtx
}

// cellPublisher returns where worker output goes.
func cellPublisher() frontend.Publisher {
	cellMu.RLock()
	defer cellMu.RUnlock()
	if curCellPub != nil {
		return curCellPub
	}
	return &fallbackPublisher{handles: map[string]*display.Handle{}}
}

// fallbackPublisher is used when no cell publisher is installed: streams go
// to the process's stdout and stderr (which the kernel redirects into the
// running cell), displays through the display package's sink. A worker's
// display id is mapped to the handle display created for it, so updates
// reach the right output.
type fallbackPublisher struct {
	mu      sync.Mutex
	handles map[string]*display.Handle
}

func (f *fallbackPublisher) Stream(name, text string) {
	w := os.Stdout
	if name == "stderr" {
		w = os.Stderr
	}
	_, _ = fmt.Fprint(w, text)
}

func (f *fallbackPublisher) Display(data frontend.MIMEBundle, metadata map[string]any, id string) {
	h := display.DisplayWithMetadata(data, metadata)
	if id != "" {
		f.mu.Lock()
		f.handles[id] = h
		f.mu.Unlock()
	}
}

func (f *fallbackPublisher) UpdateDisplay(data frontend.MIMEBundle, _ map[string]any, id string) {
	f.mu.Lock()
	h := f.handles[id]
	f.mu.Unlock()
	if h != nil {
		h.Update(data)
	}
}

func (f *fallbackPublisher) ClearOutput(wait bool) { display.ClearOutput(wait) }

// WorkerCommand is how the launcher starts a worker: Path with Args, and Env
// added to the worker's environment. The default is the running executable
// (os.Executable) with the single argument "worker", which cmd/kernel
// dispatches to WorkerMain.
type WorkerCommand struct {
	Path string
	Args []string
	Env  []string // "KEY=value" entries
}

// WorkerSubcommand is the hidden subcommand of the goaccel binary that runs
// WorkerMain.
const WorkerSubcommand = "worker"

func defaultWorkerCommand() (WorkerCommand, error) {
	exe, err := os.Executable()
	if err != nil {
		return WorkerCommand{}, fmt.Errorf("launcher: finding the goaccel executable to start workers: %w", err)
	}
	return WorkerCommand{Path: exe, Args: []string{WorkerSubcommand}}, nil
}

// SetWorkerCommand replaces the command that starts workers (tests re-exec
// their test binary; an embedding program may use another binary that calls
// WorkerMain) and returns a function that restores the previous one.
func SetWorkerCommand(c WorkerCommand) (restore func()) {
	workerCmdMu.Lock()
	prev := workerCmd
	workerCmd = func() (WorkerCommand, error) { return c, nil }
	workerCmdMu.Unlock()
	return func() {
		workerCmdMu.Lock()
		workerCmd = prev
		workerCmdMu.Unlock()
	}
}

func currentWorkerCommand() (WorkerCommand, error) {
	workerCmdMu.RLock()
	f := workerCmd
	workerCmdMu.RUnlock()
	return f()
}
