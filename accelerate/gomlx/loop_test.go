package gomlx

import (
	"strings"
	"sync"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/train"
	"github.com/gomlx/gomlx/pkg/ml/train/metrics"

	"github.com/goaccel/goaccel/accelerate"
	"github.com/goaccel/goaccel/display"
	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/interrupt"
)

// recordingTracker is a custom tracker (as a cell would define one) that
// keeps what it was given.
type recordingTracker struct {
	mu   sync.Mutex
	logs []map[string]any
	step []int
}

func (r *recordingTracker) Name() string                                { return "recorder" }
func (r *recordingTracker) RequiresLoggingDirectory() bool              { return false }
func (r *recordingTracker) MainProcessOnly() bool                       { return true }
func (r *recordingTracker) Tracker() any                                { return r }
func (r *recordingTracker) Start() error                                { return nil }
func (r *recordingTracker) StoreInitConfiguration(map[string]any) error { return nil }
func (r *recordingTracker) Finish() error                               { return nil }
func (r *recordingTracker) Log(v map[string]any, step int, _ map[string]any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, v)
	r.step = append(r.step, step)
	return nil
}

// displays records what the loop draws under the cell.
type displays struct {
	mu    sync.Mutex
	texts []string
}

func (d *displays) Stream(string, string) {}
func (d *displays) Display(b frontend.MIMEBundle, _ map[string]any, _ string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.texts = append(d.texts, b["text/plain"].(string))
}
func (d *displays) UpdateDisplay(b frontend.MIMEBundle, m map[string]any, id string) {
	d.Display(b, m, id)
}
func (d *displays) ClearOutput(bool) {}

// A loop from NewLoop trains (it runs the host half of every step), logs
// its metrics through the Accelerator's trackers at the global step, and
// draws a progress bar with the loss.
func TestLoopLogsAndShowsProgress(t *testing.T) {
	rec := &recordingTracker{}
	acc := newAccelerator(t, accelerate.WithLogWith(rec))
	if err := acc.InitTrackers("toy", nil, nil); err != nil {
		t.Fatal(err)
	}
	shown := &displays{}
	defer display.SetSink(shown)()
	acc2 := metrics.NewMovingAverageSparseCategoricalAccuracy("Moving Average Accuracy", "~acc", 0.01)
	tr, err := NewTrainer(acc, pureGo(t), toyContext(), toyModel, toyLoss, toyOptimizer(), []metrics.Interface{acc2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	loop := NewLoop(tr, LogEvery(2))
	var seen []int
	loop.OnStep("test", 0, func(l *train.Loop, _ []*tensors.Tensor) error {
		seen = append(seen, int(tr.GlobalStep()))
		return nil
	})
	if _, err := loop.RunSteps(&toyDataset{d: newToyData(), batch: 32}, 10); err != nil {
		t.Fatal(err)
	}
	// Other hooks see the step applied: the global step has moved.
	if len(seen) != 10 || seen[0] != 1 || seen[9] != 10 {
		t.Errorf("global steps seen by a later hook: %v", seen)
	}
	if len(rec.logs) != 5 || rec.step[0] != 2 || rec.step[4] != 10 {
		t.Fatalf("logged %d times at steps %v, want every 2nd step", len(rec.logs), rec.step)
	}
	for _, k := range []string{"loss+", "~loss", "~acc"} {
		if _, ok := rec.logs[4][k].(float64); !ok {
			t.Errorf("the last log lacks %q: %v", k, rec.logs[4])
		}
	}
	last := shown.texts[len(shown.texts)-1]
	if !strings.HasPrefix(last, "training [") || !strings.Contains(last, "10/10") || !strings.Contains(last, "~loss ") {
		t.Errorf("the progress bar's last state: %q", last)
	}
}

// unwinding is what an interrupted cell's goroutine panics with (the
// kernel's gxrt.Interrupt, here a stand-in).
type unwinding struct{}

func (unwinding) Error() string    { return "interrupted" }
func (unwinding) CellInterrupted() {}

// An interrupted cell's loop stops at the end of a step: the step and its
// hooks are complete, the variables hold it, and the next RunSteps goes on
// from there.
func TestLoopStopsBetweenStepsWhenInterrupted(t *testing.T) {
	acc := newAccelerator(t)
	tr, err := NewTrainer(acc, pureGo(t), toyContext(), toyModel, toyLoss, toyOptimizer(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	loop := NewLoop(tr, WithoutProgress())
	var logged []int64
	loop.OnStep("test", 0, func(*train.Loop, []*tensors.Tensor) error {
		logged = append(logged, int64(tr.GlobalStep()))
		return nil
	})
	stopAt := int64(3)
	defer interrupt.SetCheck(func() {
		if int64(tr.GlobalStep()) >= stopAt {
			panic(unwinding{})
		}
	})()
	ds := &toyDataset{d: newToyData(), batch: 32}
	unwound := func() (r any) {
		defer func() { r = recover() }()
		_, _ = loop.RunSteps(ds, 50) // it would run 50 steps without the interrupt
		return nil
	}()
	if !interrupt.IsUnwinding(unwound) {
		t.Fatalf("RunSteps ended with %v, want the interrupt's unwinding", unwound)
	}
	if got := int64(tr.GlobalStep()); got != 3 || len(logged) != 3 {
		t.Fatalf("stopped at global step %d after hooks saw %v, want step 3 complete", got, logged)
	}
	// The next cell trains on from step 3.
	stopAt = 1 << 62
	if _, err := NewLoop(tr, WithoutProgress()).RunSteps(ds, 2); err != nil {
		t.Fatal(err)
	}
	if got := int64(tr.GlobalStep()); got != 5 {
		t.Fatalf("after 2 more steps: global step %d, want 5", got)
	}
	// The package's recovery of GoMLX's panics (Eval, Predict) lets the
	// unwinding through: the cell stops rather than get an error.
	stopAt = 0
	r := func() (r any) {
		defer func() { r = recover() }()
		_ = catch(func() { interrupt.Point() })
		return nil
	}()
	if !interrupt.IsUnwinding(r) {
		t.Fatalf("catch turned the unwinding into %v", r)
	}
}
