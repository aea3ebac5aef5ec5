package compiled

import (
	"context"
	"fmt"
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
type Exit struct {
	Code int
	// main: the cell's own goroutine exited (not one it started), so no
	// one is left to wait for.
	main bool
}

func (e *Exit) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// Stuck is an interrupted cell that did not stop: it is blocked where no
// check runs (a compiled package's system call, a lock).
type Stuck struct{ Stack []byte }

func (e *Stuck) Error() string {
	return "the cell was interrupted but its code is still blocked and keeps running in the background"
}

// StopGrace is how long an interrupted cell has to stop.
const StopGrace = 2 * time.Second

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
	// main is the goroutine id running the cell's code (init or run).
	main atomic.Int64
}

// StackLimit is the goroutine stack size at which cell code panics with
// gxrt.StackOverflow. Go's own limit stops a program once a stack needs to
// outgrow 512 MB, so programs that run under go run run here.
const StackLimit = 512 << 20

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
			if r := current(cell); r != nil && r.fail(&Exit{Code: code, main: gxrt.GoroutineID() == r.main.Load()}) {
				return
			}
			late(cell, fmt.Sprintf("os.Exit(%d) in a goroutine of a cell that already ended: that goroutine stopped", code))
		},
		LaunchName: func(name string, fn any) {
			if h := launchNameHook.Load(); h != nil {
				(*h)(name, fn)
			}
		},
	})
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

func newRun(s *Session, _ int) *run {
	hooksOnce.Do(installHooks)
	r := &run{id: lastRunID.Add(1), s: s, failure: make(chan error, 1)}
	var ctx context.Context
	ctx, r.unguard = context.WithCancel(context.Background())
	go gxrt.GuardStacks(ctx, StackLimit, 5*time.Millisecond)
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
// goroutine's panic, or the end of ctx.
func (r *run) call(ctx context.Context, fn func()) error {
	if fn == nil {
		return nil
	}
	done := make(chan error, 1)
	go func() {
		r.main.Store(gxrt.GoroutineID())
		leave := gxrt.Enter(r.id)
		defer leave()
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
	}()
	stop := func() (error, bool) {
		gxrt.Stop(r.id)
		defer gxrt.Stop(0)
		select {
		case <-done:
			return nil, true
		case <-time.After(StopGrace):
			return nil, false
		}
	}
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
		if ex, ok := err.(*Exit); ok {
			// The goroutine that called os.Exit is parked for good. When it
			// is the cell's own, the goroutines the cell started stop at
			// their next check without anyone waiting; otherwise the cell's
			// own goroutine is stopped and waited for.
			if ex.main {
				gxrt.StopFor(r.id, StopGrace)
				return err
			}
			stop()
			return err
		}
		stop()
		return err
	case <-ctx.Done():
		if _, ok := stop(); !ok {
			return &Stuck{}
		}
		return ctx.Err()
	}
}
