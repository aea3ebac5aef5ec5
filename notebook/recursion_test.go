package notebook

import (
	"fmt"
	"testing"
)

// TestSleepInLeftoverGoroutine: time.Sleep in cells wakes early on interrupt
// only; a goroutine that outlives its cell must keep sleeping full periods
// (it used to spin once its cell's context had ended).
func TestSleepInLeftoverGoroutine(t *testing.T) {
	e := newEngine(t)
	mustRun(t, e, "import \"time\"\nvar ticks int64\ngo func() { for { time.Sleep(20 * time.Millisecond); ticks++ } }()")
	rep, _ := mustRun(t, e, "time.Sleep(300 * time.Millisecond)\nticks")
	var n int
	if _, err := fmt.Sscan(rep.Result["text/plain"].(string), &n); err != nil {
		t.Fatal(err)
	}
	if n < 5 || n > 40 {
		t.Fatalf("%d ticks of 20 ms in about 300 ms", n)
	}
}
