package gxrt

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// Runaway recursion. Go stops a program whose goroutine stack outgrows
// its limit with a fatal error no recover can catch; in a kernel that would
// kill the session. GuardStacks watches the process's stack memory instead
// and, once it passes the limit, makes the next Check of a goroutine that
// deep panic with StackOverflow, which unwinds it like any panic.

// StackOverflow is the panic value of a cell goroutine whose stack grew
// past the guard's limit.
type StackOverflow struct {
	// Limit is the stack size, in bytes, the guard allows.
	Limit uint64
}

func (s StackOverflow) Error() string {
	return fmt.Sprintf("goroutine stack exceeds %d-byte limit (runaway recursion?)", s.Limit)
}

// overflow is set while the guard looks for the deep goroutine; it raises
// the stopping flag that Check reads (flagsLocked).
var overflow atomic.Int32

// setOverflow sets overflow and the flags that follow from it.
func setOverflow(on bool) {
	regMu.Lock()
	if (overflow.Load() != 0) == on {
		regMu.Unlock()
		return
	}
	overflow.Store(b2i(on))
	flagsLocked()
	regMu.Unlock()
	// Functions with override hooks check only through them.
	applyStopHook()
}

// deepFrames is how many frames make a goroutine the deep one: at the
// limit (512 MB) that is frames of up to 2 KB on average.
const deepFrames = 1 << 18

var (
	framesPool = sync.Pool{New: func() any { b := make([]uintptr, deepFrames); return &b }}
	guardLimit atomic.Uint64
)

// probes counts checks while the guard is up; one in probeEvery looks at
// its goroutine's depth, so that many goroutines with ordinary stacks (which
// can also add up to the limit) pay little.
var probes atomic.Uint64

const probeEvery = 256

// deep reports whether the calling goroutine is the deep one.
func deep() bool {
	b := framesPool.Get().(*[]uintptr)
	defer framesPool.Put(b)
	return runtime.Callers(3, *b) == deepFrames
}

// GuardStacks watches stack memory until ctx ends: every interval while
// the stacks in use are past an eighth of limit, and four times less often
// below that (a poll wakes a thread, which on a machine whose cores run a
// cell's XLA threads costs the cell a few percent at 200 polls a second).
// When the stacks in use pass limit, the deep goroutine's next check
// panics with StackOverflow. It raises the runtime's own stack limit to 4×
// limit so that the guard, not the runtime, acts first: between two slow
// polls a stack grows by less than the 3× limit of room that leaves.
func GuardStacks(ctx context.Context, limit uint64, interval time.Duration) {
	guardLimit.Store(limit)
	debug.SetMaxStack(int(4 * limit))
	sample := []metrics.Sample{{Name: "/memory/classes/heap/stacks:bytes"}}
	timer := time.NewTimer(interval)
	defer timer.Stop()
	defer setOverflow(false)
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return
		}
		used := sample[0].Value.Uint64()
		// The flag stays up while stacks are over the limit: growing a
		// stack that deep copies it frame by frame, which can take longer
		// than any fixed window.
		setOverflow(used >= limit)
		next := interval
		if used < limit/8 {
			next = 4 * interval
		}
		timer.Reset(next)
	}
}
