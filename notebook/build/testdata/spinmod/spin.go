// Package spin loops without calling back into its caller: a fixture for
// interrupts that reach library code.
package spin

import (
	"fmt"
	"path/filepath"
	"runtime"
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
// check (an unwinding there would leave the lock held).
func Held(n *int64, rounds int64) {
	mu.Lock()
	for i := int64(0); i < rounds; i++ {
		atomic.AddInt64(n, 1)
	}
	mu.Unlock()
}

// Where says where it is (file:line) from a loop of its own: line 37.
func Where() (at string) {
	for i := 0; i < 1; i++ {
		_, file, line, _ := runtime.Caller(0)
		at = fmt.Sprintf("%s:%d", filepath.Base(file), line)
	}
	return at
}
