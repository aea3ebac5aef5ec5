package tensorboard

import (
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkWrite1MScalars writes one million scalars (one tag, steps 0..1M-1)
// into a fresh event file and closes it; the comparison peer is
// testdata/bench_tensorboardx.py (tensorboardX SummaryWriter.add_scalar), run
// side by side by bench/tensorboard_vs_python.sh.
func BenchmarkWrite1MScalars(b *testing.B) {
	const n = 1_000_000
	dir := b.TempDir()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		w, err := NewWriter(filepath.Join(dir, strconv.Itoa(i)), 0)
		if err != nil {
			b.Fatal(err)
		}
		for s := 0; s < n; s++ {
			if err := w.AddScalar("train/loss", float64(s)*0.001, int64(s)); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/scalar")
}

// BenchmarkTrackerLog10 is Tracker.Log with ten scalars per call.
func BenchmarkTrackerLog10(b *testing.B) {
	tr, err := New("run", b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := tr.Start(); err != nil {
		b.Fatal(err)
	}
	vals := map[string]any{}
	for i := 0; i < 10; i++ {
		vals["metric_"+strconv.Itoa(i)] = float64(i)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := tr.Log(vals, i, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if err := tr.Finish(); err != nil {
		b.Fatal(err)
	}
}
