package tracking

import (
	"strconv"
	"testing"

	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/goaccel/goaccel/display"
)

// BenchmarkLog10ScalarsTBDVCLiveChart is the caller's cost of
// Accelerator.Log with ten scalars going to tensorboard, dvclive and
// livechart at once (target: ≥ 200k calls/s, i.e. ≤ 5 µs per call).
func BenchmarkLog10ScalarsTBDVCLiveChart(b *testing.B) {
	restore := display.SetSink(nil)
	defer restore()
	dir := b.TempDir()
	specs, err := Filter([]any{"tensorboard", "dvclive", "livechart"}, dir)
	if err != nil {
		b.Fatal(err)
	}
	trackers, err := Init(specs, "bench", dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	log, _ := logtest.NewNullLogger()
	m := NewMulti(log, trackers...)
	if err := m.Start(); err != nil {
		b.Fatal(err)
	}
	vals := map[string]any{}
	for i := 0; i < 10; i++ {
		vals["metric_"+strconv.Itoa(i)] = float64(i) * 0.5
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := m.Log(vals, i, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
	b.StopTimer()
	if err := m.Finish(); err != nil {
		b.Fatal(err)
	}
}
