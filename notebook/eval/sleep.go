package eval

import (
	"time"

	"github.com/goaccel/goaccel/notebook/gxrt"
)

// sleepSlice is how often an evaluated time.Sleep looks for an interrupt.
const sleepSlice = 20 * time.Millisecond

// sleep is time.Sleep for evaluated cells: it sleeps at least d, as
// time.Sleep does, and ends with gxrt's interrupt when the cell is
// stopped (the runtime's sleep cannot be interrupted; compiled code checks
// for interrupts only in loops and at function entries).
func sleep(d time.Duration) {
	deadline := time.Now().Add(d)
	for {
		gxrt.Check()
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		time.Sleep(min(left, sleepSlice))
	}
}
