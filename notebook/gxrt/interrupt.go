package gxrt

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/goaccel/goaccel/interrupt"
)

// Interrupts.
//
// Stop(run) marks a run as stopped; its goroutines then panic with
// Interrupt (unwinding their stacks and running their deferred calls, as
// a panic does) where they next reach a check: Check, which generated code
// calls at every function entry and loop iteration, and every blocking
// operation of cell code, which gen rewrites into the functions below
// (channel sends and receives, select, sync.WaitGroup.Wait, sync.Mutex and
// RWMutex locks, time.Sleep): they wait on their operation and on a wake-up
// channel that Stop closes.
//
// The fast paths cost an atomic load: Check is inlined into cell code and
// reads one flag, set only while a stop is in progress, and the blocking
// functions try their operation before anything else. Finding out whether
// the calling goroutine belongs to a stopped run (its id, a map) is left to
// the slow path.
//
// A stop is in progress during StopGrace after Stop. A run that still has
// goroutines after that (blocked where no check runs: a system call of a
// compiled package) is a zombie: now and then (zombiePeriod) the flag is
// raised and the wake-up channels closed again, so that a zombie goroutine
// that comes back to cell code stops there, and cell statements and
// blocking operations check for zombies at every step.

// Interrupt is the panic value that unwinds the goroutines of an
// interrupted cell.
type Interrupt struct{}

func (Interrupt) Error() string { return "interrupted" }

// CellInterrupted makes Interrupt an interrupt.Unwinding: library code
// that recovers panics lets it through.
func (Interrupt) CellInterrupted() {}

// Library code's safe points (interrupt.Point) run Stmt's check: they come
// once per step or token, seldom enough to look for a goroutine that
// outlived its interrupt (a zombie) at each, where Check sees zombies only
// in the short windows that keep hot loops fast.
func init() { interrupt.SetCheck(Stmt) }

// StopGrace is how long the goroutines of a stopped run have to stop
// before the run counts as stuck.
const StopGrace = 2 * time.Second

// deferGrace is how long the deferred calls of an interrupted goroutine
// may run before they are interrupted too; graceTick how often goroutines
// blocked then are woken to look.
const (
	deferGrace = 500 * time.Millisecond
	graceTick  = 100 * time.Millisecond
)

// zombiePeriod is how often zombies are woken, zombieWindow for how long
// the checks look for them then.
const (
	zombiePeriod = 250 * time.Millisecond
	zombieWindow = 2 * time.Millisecond
)

var (
	// stopping is set while a stop is in progress (and during the zombie
	// windows): Check looks at the calling goroutine then.
	stopping atomic.Int32
	// stops is stopping without the stack guard's part (stack.go).
	stops atomic.Int32
	// zombies is set while a stopped run past its grace has goroutines.
	zombies atomic.Int32
)

// stopState is a stopped run with goroutines left.
type stopState struct {
	gone  chan struct{} // closed when the last one ends
	since time.Time
}

// Under regMu (goroutines.go).
var (
	stopped = map[int64]*stopState{}
	window  bool // a zombie window is open
	reaping bool // the reaper runs
)

// Stop interrupts run: its goroutines panic with Interrupt at their next
// check. It returns a channel closed when none of them is left (at once
// when it has none).
func Stop(run int64) <-chan struct{} {
	regMu.Lock()
	if live[run] == 0 {
		regMu.Unlock()
		c := make(chan struct{})
		close(c)
		return c
	}
	s := stopped[run]
	if s == nil {
		s = &stopState{gone: make(chan struct{}), since: time.Now()}
		stopped[run] = s
	}
	flagsLocked()
	if !reaping {
		reaping = true
		go reap()
	}
	regMu.Unlock()
	applyStopHook()
	pulse()
	return s.gone
}

// The stop hook: functions of cells with override hooks (package-level
// ones) have no check of their own; while a stop is in progress, the
// engine sets their hooks to ones that check (SetStopHook).
var (
	stopHook    atomic.Pointer[func(on bool)]
	stopHookMu  sync.Mutex
	stopHookSet bool // what the hook was last told
)

// SetStopHook installs what is told when stops start (on) and end: it
// makes the functions of cells without checks of their own check for
// interrupts, and stop doing so.
func SetStopHook(f func(on bool)) { stopHook.Store(&f) }

// applyStopHook tells the stop hook of a change of the stopping flag.
func applyStopHook() {
	h := stopHook.Load()
	if h == nil {
		return
	}
	stopHookMu.Lock()
	defer stopHookMu.Unlock()
	if on := stopping.Load() != 0; on != stopHookSet {
		(*h)(on)
		stopHookSet = on
	}
}

// StoppedRun is an interrupted run some of whose goroutines still run.
type StoppedRun struct {
	Run   int64
	Since time.Time       // when it was stopped
	Gone  <-chan struct{} // closed when its last goroutine ends
}

// StoppedRuns lists the interrupted runs that still have goroutines, the
// oldest first.
func StoppedRuns() []StoppedRun {
	regMu.Lock()
	defer regMu.Unlock()
	out := make([]StoppedRun, 0, len(stopped))
	for run, s := range stopped {
		out = append(out, StoppedRun{Run: run, Since: s.since, Gone: s.gone})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Since.Before(out[j].Since) })
	return out
}

// Stopped reports whether run was stopped and still has goroutines.
func Stopped(run int64) bool {
	regMu.Lock()
	defer regMu.Unlock()
	return stopped[run] != nil
}

// flagsLocked sets the flags from the stopped runs. Callers hold regMu.
func flagsLocked() {
	grace, zombie := false, false
	now := time.Now()
	for _, s := range stopped {
		if now.Sub(s.since) < StopGrace {
			grace = true
		} else {
			zombie = true
		}
	}
	stops.Store(b2i(grace || window && zombie))
	stopping.Store(b2i(grace || window && zombie || overflow.Load() != 0))
	zombies.Store(b2i(zombie))
}

func b2i(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// reap keeps the flags in step with the stopped runs while there are any,
// and wakes zombies now and then.
func reap() {
	for {
		regMu.Lock()
		flagsLocked()
		if len(stopped) == 0 {
			reaping = false
			regMu.Unlock()
			applyStopHook()
			return
		}
		grace := stopping.Load() != 0
		regMu.Unlock()
		applyStopHook()
		if grace {
			// Wake the goroutines blocked in deferred calls of stopped
			// goroutines: past deferGrace they stop too.
			time.Sleep(graceTick)
			pulse()
			continue
		}
		regMu.Lock()
		window = true
		flagsLocked()
		regMu.Unlock()
		applyStopHook()
		pulse()
		time.Sleep(zombieWindow)
		regMu.Lock()
		window = false
		flagsLocked()
		regMu.Unlock()
		applyStopHook()
		time.Sleep(zombiePeriod)
	}
}

// Check is called by compiled cell code at every loop iteration and
// function entry: it panics with Interrupt in a goroutine of a stopped
// run.
func Check() {
	if stopping.Load() != 0 {
		checkSlow()
	}
}

// CheckCall is Check kept out of line, for functions that defer the
// recover builtin directly (defer recover()): with Check inlined into such
// a function, the toolchain's -dynlink code (plugins) makes that deferred
// recover miss the panic it must stop (Go's test/recover1.go, go1.26).
//
//go:noinline
func CheckCall() { Check() }

// Stmt is called by a cell's code between its top-level statements, and by
// the loops of library code that iterate once per step (a training step,
// an evaluation batch: safepoint.Choice.Strong): the check of Check, and a
// zombie's end.
func Stmt() { checkAny() }

func checkAny() {
	if stopping.Load()|zombies.Load() != 0 {
		checkSlow()
	}
}

// checkSlow panics with Interrupt in a goroutine of a stopped run: the
// first time it looks, and again when the goroutine still runs cell code
// deferGrace later. In between, the deferred calls the panic runs run as
// in Go (their own checks do not cut them short), and so does code after a
// recover.
func checkSlow() {
	if overflow.Load() != 0 {
		// While the stack guard looks, one check in probeEvery looks at
		// its goroutine's depth and, when it is not the deep one, goes on
		// to the interrupt check below: that check names the goroutine,
		// which costs a walk of its whole stack.
		if probes.Add(1)%probeEvery != 0 {
			return
		}
		if deep() {
			panic(StackOverflow{Limit: guardLimit.Load()})
		}
		if stops.Load() == 0 {
			return
		}
	}
	id := goid()
	regMu.Lock()
	interrupt := false
	if m := members[id]; m != nil && stopped[m.run] != nil {
		switch {
		case m.interrupted.IsZero():
			m.interrupted = time.Now()
			interrupt = true
		case time.Since(m.interrupted) > deferGrace:
			interrupt = true
		}
	}
	regMu.Unlock()
	if interrupt {
		panic(Interrupt{})
	}
}

// Wake-up channels: closed (and replaced) by every stop. They are sharded
// by the waiting goroutine's stack address so that goroutines in select
// statements do not all lock one channel.

const wakeShards = 32

type wakers [wakeShards]chan struct{}

var wake atomic.Pointer[wakers]

func init() { wake.Store(newWakers()) }

func newWakers() *wakers {
	var w wakers
	for i := range w {
		w[i] = make(chan struct{})
	}
	return &w
}

var pulseMu sync.Mutex

// pulse wakes every goroutine waiting in this package's blocking
// functions; each looks at whether it was stopped.
func pulse() {
	pulseMu.Lock()
	old := wake.Swap(newWakers())
	pulseMu.Unlock()
	for _, c := range old {
		close(c)
	}
}

// wakeCh is the calling goroutine's wake-up channel. Load it before
// checking the flags: a stop that comes after the check closes it.
func wakeCh() <-chan struct{} {
	var here byte
	return wake.Load()[(uintptr(unsafe.Pointer(&here))>>13)%wakeShards]
}

// Blocking operations of cell code.

// Recv is the receive operation <-ch.
func Recv[T any](ch <-chan T) T {
	select {
	case v := <-ch:
		return v
	default:
	}
	for {
		w := wakeCh()
		checkAny()
		select {
		case v := <-ch:
			return v
		case <-w:
			checkSlow()
		}
	}
}

// Recv2 is the receive operation v, ok := <-ch.
func Recv2[T any](ch <-chan T) (T, bool) {
	select {
	case v, ok := <-ch:
		return v, ok
	default:
	}
	for {
		w := wakeCh()
		checkAny()
		select {
		case v, ok := <-ch:
			return v, ok
		case <-w:
			checkSlow()
		}
	}
}

// Sender sends on a channel: SendTo(ch).Send(v) is the statement ch <- v
// (v is assigned to the element type as Go assigns it).
type Sender[T any] struct{ ch chan<- T }

// SendTo returns a Sender on ch.
func SendTo[T any](ch chan<- T) Sender[T] { return Sender[T]{ch} }

// Send sends v.
func (s Sender[T]) Send(v T) {
	select {
	case s.ch <- v:
		return
	default:
	}
	for {
		w := wakeCh()
		checkAny()
		select {
		case s.ch <- v:
			return
		case <-w:
			checkSlow()
		}
	}
}

// Block is select {}.
func Block() {
	for {
		w := wakeCh()
		checkAny()
		<-w
		checkSlow()
	}
}

// Intr is the channel of the case gen adds to a select statement of cell
// code:
//
//	_gxs1: select {
//	case <-_gxrt.Intr(): _gxrt.Wake(); goto _gxs1
//	...
//	}
func Intr() <-chan struct{} {
	w := wakeCh()
	checkAny()
	return w
}

// Wake is the body of the case Intr's channel selects: it stops a
// goroutine of a stopped run; the others wait again.
func Wake() { checkSlow() }

// Sleep is time.Sleep.
func Sleep(d time.Duration) {
	checkAny()
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	Recv(t.C)
}

// Wait is wg.Wait().
func Wait(wg *sync.WaitGroup) {
	checkAny()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	Recv(done)
}

// WaitGroupGo is wg.Go(f) at origin: f runs in a goroutine of the calling
// goroutine's cell, as with a go statement.
func WaitGroupGo(wg *sync.WaitGroup, origin string, f func()) {
	wg.Add(1)
	GoAt(origin, func() {
		defer wg.Done()
		f()
	})
}

// Lock is m.Lock().
func Lock(m *sync.Mutex) {
	if m.TryLock() {
		return
	}
	acquire(m.Lock, m.Unlock)
}

// LockRW is m.Lock() of a sync.RWMutex.
func LockRW(m *sync.RWMutex) {
	if m.TryLock() {
		return
	}
	acquire(m.Lock, m.Unlock)
}

// RLock is m.RLock().
func RLock(m *sync.RWMutex) {
	if m.TryRLock() {
		return
	}
	acquire(m.RLock, m.RUnlock)
}

// LockLocker is l.Lock() of a sync.Locker.
func LockLocker(l sync.Locker) {
	switch m := l.(type) {
	case *sync.Mutex:
		Lock(m)
	case *sync.RWMutex:
		LockRW(m)
	default:
		l.Lock()
	}
}

// acquire takes a lock that is held: a helper goroutine waits for it
// (locks are not tied to goroutines) while the caller waits for the helper
// or its stop. A stopped caller leaves the lock to the helper, which gives
// it back once it has it.
func acquire(lock, unlock func()) {
	const (
		waiting = iota
		acquired
		abandoned
	)
	var state atomic.Int32
	got := make(chan struct{})
	go func() {
		lock()
		if state.CompareAndSwap(waiting, acquired) {
			close(got)
			return
		}
		unlock()
	}()
	defer func() {
		if r := recover(); r != nil {
			if !state.CompareAndSwap(waiting, abandoned) {
				unlock() // acquired as the stop came
			}
			panic(r)
		}
	}()
	Recv(got)
}
