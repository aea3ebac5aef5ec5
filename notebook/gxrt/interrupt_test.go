package gxrt

import (
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var testRun atomic.Int64

func init() { testRun.Store(1 << 40) }

// startRun runs fs as goroutines of a new run, each reporting how it ended
// on the returned channel.
func startRun(fs ...func()) (int64, chan any) {
	run := testRun.Add(1)
	ended := make(chan any, len(fs))
	for _, f := range fs {
		Start(run, func() {
			defer func() { ended <- recover() }()
			f()
		})
	}
	return run, ended
}

// patience bounds every wait in these tests: a hang guard far above what a
// busy machine needs, never a budget.
const patience = 5 * time.Minute

func waitGone(t *testing.T, gone <-chan struct{}) {
	t.Helper()
	select {
	case <-gone:
	case <-time.After(patience):
		t.Fatalf("goroutines left: %+v", Goroutines(0))
	}
}

// waitFor polls cond until it holds; it fails the test only when cond does
// not hold within patience.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v: %+v", what, patience, Goroutines(0))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitBlocked waits until at least n goroutines of run wait (neither
// running nor runnable).
func waitBlocked(t *testing.T, run int64, n int) {
	t.Helper()
	waitFor(t, "blocked goroutines", func() bool {
		waiting := 0
		for _, g := range Goroutines(run) {
			if g.State != "running" && g.State != "runnable" {
				waiting++
			}
		}
		return waiting >= n
	})
}

func TestStopEndsEveryBlockingOperation(t *testing.T) {
	var mu sync.Mutex
	mu.Lock()
	var rw sync.RWMutex
	rw.Lock()
	var wg sync.WaitGroup
	wg.Add(1)
	ch, out := make(chan int), make(chan int)
	ops := map[string]func(){
		"Recv":       func() { Recv(ch) },
		"Recv2":      func() { Recv2(ch) },
		"Send":       func() { SendTo(out).Send(1) },
		"Block":      Block,
		"Sleep":      func() { Sleep(time.Hour) },
		"Lock":       func() { Lock(&mu) },
		"LockRW":     func() { LockRW(&rw) },
		"RLock":      func() { RLock(&rw) },
		"LockLocker": func() { LockLocker(&mu) },
		"Wait":       func() { Wait(&wg) },
		"select": func() {
		again:
			select {
			case <-Intr():
				Wake()
				goto again
			case <-ch:
			}
		},
		"loop": func() {
			for {
				Check()
			}
		},
	}
	var names []string
	var fs []func()
	for name, f := range ops {
		names = append(names, name)
		fs = append(fs, f)
	}
	run, ended := startRun(fs...)
	// every goroutine is blocked (but "loop")
	waitBlocked(t, run, len(fs)-1)
	states := map[string]bool{}
	for _, g := range Goroutines(run) {
		states[g.State] = true
	}
	for _, want := range []string{"chan receive", "chan send", "select (no cases)", "sleep", "sync.Mutex.Lock", "sync.RWMutex.Lock", "sync.RWMutex.RLock", "sync.Locker.Lock", "sync.WaitGroup.Wait", "select"} {
		if !states[want] {
			t.Errorf("no goroutine in state %q: %v", want, states)
		}
	}
	waitGone(t, Stop(run))
	for range fs {
		if v := <-ended; v != (Interrupt{}) {
			t.Errorf("ended with %v, want Interrupt", v)
		}
	}
	// The abandoned locks are given back once their helpers get them.
	mu.Unlock()
	rw.Unlock()
	waitFor(t, "the mutex given back", mu.TryLock)
	waitFor(t, "the RWMutex given back", rw.TryLock)
	_ = names
}

func TestStopLeavesOtherRunsAlone(t *testing.T) {
	ch := make(chan int)
	other, otherEnded := startRun(func() { Recv(ch) })
	run, _ := startRun(func() { Block() })
	waitBlocked(t, other, 1)
	waitBlocked(t, run, 1)
	waitGone(t, Stop(run))
	select {
	case v := <-otherEnded:
		t.Fatalf("the other run's goroutine ended: %v", v)
	case <-time.After(50 * time.Millisecond):
	}
	ch <- 1
	if v := <-otherEnded; v != nil {
		t.Fatalf("ended with %v", v)
	}
	waitGone(t, Stop(other))
}

func TestDeferredCallsRunAfterAnInterrupt(t *testing.T) {
	var cleaned atomic.Int32
	var mu sync.Mutex
	var fs []func()
	for i := 0; i < 4; i++ {
		fs = append(fs, func() {
			defer func() {
				Check() // a deferred function's own check does not cut it short
				Lock(&mu)
				Sleep(time.Millisecond)
				cleaned.Add(1)
				mu.Unlock()
			}()
			for {
				Check()
			}
		})
	}
	// A deferred call that does not end is interrupted after deferGrace.
	fs = append(fs, func() {
		defer Block()
		Block()
	})
	run, ended := startRun(fs...)
	waitFor(t, "the run's goroutines", func() bool { return len(Goroutines(run)) == len(fs) })
	waitBlocked(t, run, 1)
	t0 := time.Now()
	// The blocking deferred call would block forever: gone, it was
	// interrupted, and not before deferGrace.
	waitGone(t, Stop(run))
	if d := time.Since(t0); d < deferGrace {
		t.Errorf("stopped after %v, before deferGrace (%v)", d, deferGrace)
	}
	for range fs {
		<-ended
	}
	if cleaned.Load() != 4 {
		t.Fatalf("%d deferred calls completed, want 4", cleaned.Load())
	}
}

func TestGoroutinesStartedByAStoppedRunStop(t *testing.T) {
	started := make(chan bool)
	run, ended := startRun(func() {
		GoAt("cell[1]:2", func() {
			started <- true
			Block()
		})
		Block()
	})
	<-started
	gs := Goroutines(run)
	if len(gs) != 2 || gs[1].Origin != "cell[1]:2" && gs[0].Origin != "cell[1]:2" {
		t.Fatalf("goroutines: %+v", gs)
	}
	waitGone(t, Stop(run))
	<-ended
}

func TestStdinReadsLinesOnDemand(t *testing.T) {
	lines := []string{"gopher 42", "héllo", "last"}
	asked := 0
	SetHooks(&Hooks{Input: func() (string, error) {
		if asked >= len(lines) {
			return "", io.EOF
		}
		asked++
		return lines[asked-1], nil
	}})
	defer SetHooks(nil)
	ResetStdin()
	var name string
	var n int
	if _, err := Scanln(&name, &n); err != nil || name != "gopher" || n != 42 {
		t.Fatalf("Scanln: %q %d %v", name, n, err)
	}
	if asked != 1 {
		t.Fatalf("asked %d times", asked)
	}
	var w string
	if _, err := Scan(&w); err != nil || w != "héllo" {
		t.Fatalf("Scan: %q %v", w, err)
	}
	rest, err := io.ReadAll(Stdin)
	if err != nil || string(rest) != "last\n" {
		t.Fatalf("ReadAll: %q %v", rest, err)
	}
}

func TestStdinInterruptedStopsTheReader(t *testing.T) {
	// The input request ends with the interrupt, and the stop follows: the
	// hook answers only once Stop was called, as a kernel's interrupt does.
	asked, stopping := make(chan bool, 1), make(chan bool)
	run, ended := startRun(func() {
		SetHooks(&Hooks{Input: func() (string, error) {
			asked <- true
			<-stopping
			return "", ErrInterrupted
		}})
		var s string
		Scanln(&s)
	})
	<-asked
	gone := Stop(run)
	close(stopping)
	waitGone(t, gone)
	if v := <-ended; v != (Interrupt{}) {
		t.Fatalf("ended with %v", v)
	}
	SetHooks(nil)
}
