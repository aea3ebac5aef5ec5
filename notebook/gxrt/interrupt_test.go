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

func waitGone(t *testing.T, gone <-chan struct{}) {
	t.Helper()
	select {
	case <-gone:
	case <-time.After(time.Second):
		t.Fatalf("goroutines left: %+v", Goroutines(0))
	}
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
	// every goroutine is blocked
	deadline := time.Now().Add(time.Second)
	for {
		gs := Goroutines(run)
		waiting := 0
		for _, g := range gs {
			if g.State != "running" && g.State != "runnable" {
				waiting++
			}
		}
		if waiting >= len(fs)-1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not blocked: %+v", gs)
		}
		time.Sleep(5 * time.Millisecond)
	}
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
	time.Sleep(10 * time.Millisecond)
	if !mu.TryLock() || !rw.TryLock() {
		t.Fatal("a lock taken for a stopped goroutine was kept")
	}
	_ = names
}

func TestStopLeavesOtherRunsAlone(t *testing.T) {
	ch := make(chan int)
	other, otherEnded := startRun(func() { Recv(ch) })
	run, _ := startRun(func() { Block() })
	time.Sleep(10 * time.Millisecond)
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
	time.Sleep(10 * time.Millisecond)
	t0 := time.Now()
	waitGone(t, Stop(run))
	if d := time.Since(t0); d < deferGrace || d > deferGrace+3*graceTick {
		t.Errorf("stopped after %v", d)
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
	run, ended := startRun(func() {
		SetHooks(&Hooks{Input: func() (string, error) { return "", ErrInterrupted }})
		var s string
		Scanln(&s)
	})
	time.Sleep(10 * time.Millisecond)
	waitGone(t, Stop(run))
	if v := <-ended; v != (Interrupt{}) {
		t.Fatalf("ended with %v", v)
	}
	SetHooks(nil)
}
