// Package spin loops without calling back into its caller: a fixture for
// interrupts that reach library code.
package spin

import (
	"sync"
	"sync/atomic"
)

// Forever adds to *n until its goroutine ends; done runs when it returns
// or unwinds.
func Forever(n *int64, done func()) {
	defer done()
	for {
		atomic.AddInt64(n, 1)
	}
}

var mu sync.Mutex

// Held loops while it holds a lock it releases after the loop: it has no
// safe point (an unwinding would leave the lock held).
func Held(n *int64, rounds int64) {
	mu.Lock()
	for i := int64(0); i < rounds; i++ {
		atomic.AddInt64(n, 1)
	}
	mu.Unlock()
}
