package compiled

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goaccel/goaccel/notebook/gxrt"
)

// Panic is a panic that ended a cell: in its code or in a goroutine it
// started.
type Panic struct {
	Value any
	// Stack is the panicking goroutine's stack, as runtime/debug.Stack
	// prints it.
	Stack []byte
	// Goroutine reports a panic in a goroutine the cell started.
	Goroutine bool
}

func (p *Panic) Error() string { return fmt.Sprintf("panic: %v", p.Value) }

// Exit is os.Exit (or log.Fatal) called by a cell.
type Exit struct{ Code int }

func (e *Exit) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// Stuck is an interrupted cell that did not stop within StopGrace: some
// of its goroutines are blocked where no check runs (a system call of a
// compiled package). They are left running; each stops when it comes back
// to the cell's code.
type Stuck struct {
	// Goroutines are those still running, with their stacks.
	Goroutines []CellGoroutine
}

func (e *Stuck) Error() string {
	return "the cell was interrupted but its code is still blocked and keeps running in the background"
}

// StopGrace is how long an interrupted cell has to stop.
const StopGrace = gxrt.StopGrace

// run is one execution of a cell's code. Its id (not the execution count,
// which may repeat across sessions in one process) tags the goroutines the
// code starts.
type run struct {
	id      int64
	s       *Session
	mu      sync.Mutex
	vals    []any
	failure chan error // a goroutine's panic or an os.Exit
	ended   bool
	// unguard stops the stack guard watching the run.
	unguard context.CancelFunc
}

// StackLimit is the goroutine stack size at which cell code panics with
// gxrt.StackOverflow. Go's own limit stops a program once a stack needs to
// outgrow 512 MB; the guard acts at half that, because growing a stack copies
// it frame by frame (stopping runaway recursion takes ~0.7 s at 256 MB, 2 s
// and more at 512 MB), and a stack that deep is almost always runaway.
const StackLimit = 256 << 20

var (
	runs      sync.Map // id → *run
	lastRunID atomic.Int64
	hooksOnce sync.Once
)

func installHooks() {
	gxrt.CatchExits()
	gxrt.SetHooks(&gxrt.Hooks{
		Result: func(vals []any, multi bool) {
			if r := current(gxrt.CurrentCell()); r != nil {
				r.mu.Lock()
				r.vals = vals
				r.mu.Unlock()
			}
		},
		GoPanic: func(cell int64, v any, stack []byte) {
			p := &Panic{Value: v, Stack: stack, Goroutine: true}
			if r := current(cell); r != nil && r.fail(p) {
				return
			}
			late(cell, fmt.Sprintf("panic in a goroutine of a cell that already ended: %v\n%s", v, stack))
		},
		Exit: func(cell int64, code int) {
			if r := current(cell); r != nil && r.fail(&Exit{Code: code}) {
				return
			}
			late(cell, fmt.Sprintf("os.Exit(%d) in a goroutine of a cell that already ended: that goroutine stopped", code))
		},
		LaunchName: func(name string, fn any) {
			if h := launchNameHook.Load(); h != nil {
				(*h)(name, fn)
			}
		},
		Input: func() (string, error) {
			if h := inputHook.Load(); h != nil {
				return (*h)()
			}
			return "", io.EOF
		},
	})
}

// inputHook answers cells' reads of standard input.
var inputHook atomic.Pointer[func() (string, error)]

// SetInput installs what answers cells' reads of standard input: a line
// (without its line break), io.EOF, gxrt.ErrInterrupted when the cell was
// interrupted while it waited, or another error for the read to return.
func SetInput(f func() (string, error)) { inputHook.Store(&f) }

// runCells maps run ids to the execution counts of their cells.
var runCells sync.Map

// CellGoroutine is a live goroutine of a cell.
type CellGoroutine struct {
	gxrt.Goroutine
	// Cell is the execution count of the cell it belongs to (0: unknown).
	Cell int
}

// Goroutines lists the live goroutines of cells: those cells started and
// still running, and cells' own goroutines that did not stop when
// interrupted.
func Goroutines() []CellGoroutine { return cellGoroutines(gxrt.Goroutines(0)) }

func cellGoroutines(gs []gxrt.Goroutine) []CellGoroutine {
	var out []CellGoroutine
	for _, g := range gs {
		out = append(out, CellGoroutine{Goroutine: g, Cell: cellOf(g.Run)})
	}
	return out
}

// cellOf is the execution count of run's cell (0: unknown).
func cellOf(run int64) int {
	if n, ok := runCells.Load(run); ok {
		return n.(int)
	}
	return 0
}

// Job is an interrupted cell some of whose goroutines did not stop: they
// are blocked where no check runs (a system call, a cgo call, code without
// safe points) and stop when they reach one.
type Job struct {
	// Cell is the execution count of the cell (0: unknown).
	Cell int
	// Since is when it was interrupted.
	Since time.Time
	// Gone is closed when its last goroutine ends.
	Gone <-chan struct{}
	// Goroutines are those left, as they were when Jobs was called.
	Goroutines []CellGoroutine
}

// Jobs lists the interrupted cells that still have goroutines, the oldest
// first.
func Jobs() []Job {
	var out []Job
	for _, s := range gxrt.StoppedRuns() {
		out = append(out, Job{Cell: cellOf(s.Run), Since: s.Since, Gone: s.Gone, Goroutines: cellGoroutines(gxrt.Goroutines(s.Run))})
	}
	return out
}

// launchNameHook hears the names of launched functions.
var launchNameHook atomic.Pointer[func(string, any)]

// SetLaunchName installs what hears the names of launched functions.
func SetLaunchName(f func(name string, fn any)) { launchNameHook.Store(&f) }

// lateSessions maps run ids of ended runs to their session, for late
// reports.
var lateSessions sync.Map

func late(id int64, msg string) {
	if v, ok := lateSessions.Load(id); ok {
		if s := v.(*Session); s.Late != nil {
			s.Late(msg)
		}
	}
}

func current(id int64) *run {
	if v, ok := runs.Load(id); ok {
		return v.(*run)
	}
	return nil
}

func newRun(s *Session, n int) *run {
	hooksOnce.Do(installHooks)
	r := &run{id: lastRunID.Add(1), s: s, failure: make(chan error, 1)}
	var ctx context.Context
	ctx, r.unguard = context.WithCancel(context.Background())
	go gxrt.GuardStacks(ctx, StackLimit, 5*time.Millisecond)
	runCells.Store(r.id, n)
	runs.Store(r.id, r)
	lateSessions.Store(r.id, s)
	return r
}

// end retires the run: later reports from its goroutines are late.
func (r *run) end() {
	r.unguard()
	r.mu.Lock()
	r.ended = true
	r.mu.Unlock()
	runs.Delete(r.id)
}

// fail records a goroutine's panic or an exit; it reports whether the run
// takes it (the first one wins).
func (r *run) fail(err error) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return false
	}
	select {
	case r.failure <- err:
	default:
	}
	return true
}

func (r *run) values() []any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.vals
}

// call runs fn in a goroutine of the run and waits for it, an exit, a
// goroutine's panic, or the end of ctx. When it returns early, the run's
// goroutines are stopped first: nothing of the run goes on after call
// returns, unless it is stuck (*Stuck).
func (r *run) call(ctx context.Context, fn func()) error {
	if fn == nil {
		return nil
	}
	done := make(chan error, 1)
	gxrt.Start(r.id, func() {
		defer func() {
			if v := recover(); v != nil {
				if _, ok := v.(gxrt.Interrupt); ok {
					done <- context.Canceled
					return
				}
				done <- &Panic{Value: v, Stack: debug.Stack()}
				return
			}
			done <- nil
		}()
		fn()
	})
	select {
	case err := <-done:
		if err == nil {
			// A goroutine that ended by os.Exit in a compiled package
			// (gxrt's exit hook) ends like one that returned: the exit it
			// reported first is what counts.
			select {
			case f := <-r.failure:
				return f
			default:
			}
		}
		return err
	case err := <-r.failure:
		// A goroutine's panic, or os.Exit (whose goroutine is parked):
		// the cell ends, and with it the rest of its goroutines.
		r.stop()
		return err
	case <-ctx.Done():
		if stuck := r.stop(); stuck != nil {
			return stuck
		}
		return ctx.Err()
	}
}

// stop stops the run's goroutines and waits for them, at most StopGrace;
// it returns the ones left then.
func (r *run) stop() *Stuck {
	gone := gxrt.Stop(r.id)
	t := time.NewTimer(StopGrace)
	defer t.Stop()
	select {
	case <-gone:
		return nil
	case <-t.C:
		return &Stuck{Goroutines: cellGoroutines(gxrt.Goroutines(r.id))}
	}
}
