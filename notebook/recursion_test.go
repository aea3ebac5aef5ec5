package notebook

import (
	"fmt"
	"testing"
)

// TestSleepInLeftoverGoroutine: time.Sleep in cells wakes early on interrupt
// only; a goroutine that outlives its cell must keep sleeping full periods
// (it used to spin once its cell's context had ended).
//
// The cell waits for 5 more ticks (progress, however slow the machine) and
// measures how long they took: a goroutine that sleeps full periods ticks at
// most once per 20 ms of it (plus one sleep begun before), one that spins
// ticks thousands of times.
func TestSleepInLeftoverGoroutine(t *testing.T) {
	e := newEngine(t)
	mustRun(t, e, "import (\"sync/atomic\"; \"time\")\nvar ticks atomic.Int64\ngo func() { for { time.Sleep(20 * time.Millisecond); ticks.Add(1) } }()")
	rep, _ := mustRun(t, e, "t0, n0 := time.Now(), ticks.Load()\nfor ticks.Load() < n0+5 {\n\ttime.Sleep(time.Millisecond)\n}\n[2]int64{ticks.Load() - n0, int64(time.Since(t0) / (20 * time.Millisecond))}")
	var n, periods int64
	if _, err := fmt.Sscanf(rep.Result["text/plain"].(string), "[%d %d]", &n, &periods); err != nil {
		t.Fatalf("%v: %q", err, rep.Result["text/plain"])
	}
	if n < 5 || n > periods+1 {
		t.Fatalf("%d ticks of 20 ms in %d periods of 20 ms", n, periods)
	}
}
