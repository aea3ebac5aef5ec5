package gomlx

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/train"

	"github.com/goaccel/goaccel/display"
	"github.com/goaccel/goaccel/interrupt"
)

// Priorities of the hooks NewLoop attaches (GoMLX runs lower first).
const (
	// SyncPriority runs the host half of each step (all-reduce, update)
	// before any other hook sees the step.
	SyncPriority train.Priority = math.MinInt32
	// LogPriority logs the step's metrics, after the step is complete.
	LogPriority train.Priority = -1000
	// InterruptPriority runs last at every step: an interrupted cell's
	// loop stops there, after the step and every other hook are done.
	InterruptPriority train.Priority = math.MaxInt32
)

// LoopOption configures NewLoop.
type LoopOption func(*loopConfig)

type loopConfig struct {
	logEvery int
	progress bool
	label    string
}

// LogEvery logs the training metrics every n steps (1 by default).
func LogEvery(n int) LoopOption {
	return func(c *loopConfig) { c.logEvery = max(1, n) }
}

// WithoutProgress turns the progress bar off.
func WithoutProgress() LoopOption { return func(c *loopConfig) { c.progress = false } }

// ProgressLabel names the progress bar ("training" by default).
func ProgressLabel(label string) LoopOption { return func(c *loopConfig) { c.label = label } }

// NewLoop returns GoMLX's train.Loop for t with goaccel's hooks attached:
// the host half of every step (all-reduce, update: see the package doc);
// the training metrics, averaged over the processes, logged with
// Accelerator.Log at the global step (every tracker and the live chart
// under the cell); and a progress bar under the cell, with the latest
// loss. Attach GoMLX's own callbacks (train.EveryNSteps for checkpoints,
// its plots) as usual; every process must run the loop.
func NewLoop(t *Trainer, opts ...LoopOption) *train.Loop {
	cfg := loopConfig{logEvery: 1, progress: true, label: "training"}
	for _, o := range opts {
		o(&cfg)
	}
	loop := train.NewLoop(t.trainer)
	// FSDP's FULL_SHARD: the parameters are gathered for the loop's
	// first step and after each update for the next; the loop's end
	// releases them (fullshard.go).
	loop.OnStart("goaccel: gather the parameters", SyncPriority, func(*train.Loop, train.Dataset) error {
		return t.gather()
	})
	loop.OnStep("goaccel: all-reduce and update", SyncPriority, func(*train.Loop, []*tensors.Tensor) error {
		if err := t.afterStep(); err != nil {
			return err
		}
		return t.gather()
	})
	loop.OnEnd("goaccel: release the parameters", SyncPriority, func(*train.Loop, []*tensors.Tensor) error {
		return t.release()
	})
	// A safe point between two steps: the variables hold the step just
	// completed, and the next cell may go on training from there.
	loop.OnStep("goaccel: interrupt", InterruptPriority, func(*train.Loop, []*tensors.Tensor) error {
		interrupt.Point()
		return nil
	})
	var bar *display.Progress
	main := t.acc.IsMainProcess()
	if cfg.progress && main {
		loop.OnStart("goaccel: progress", 0, func(l *train.Loop, _ train.Dataset) error {
			total := l.EndStep - l.StartStep
			if total < 0 {
				total = 0
			}
			bar = display.NewProgress(cfg.label, total)
			return nil
		})
		loop.OnEnd("goaccel: progress", 0, func(*train.Loop, []*tensors.Tensor) error {
			if bar != nil {
				bar.Done()
			}
			return nil
		})
	}
	loop.OnStep("goaccel: log metrics", LogPriority, func(l *train.Loop, metrics []*tensors.Tensor) error {
		done := l.LoopStep - l.StartStep + 1
		last := l.EndStep >= 0 && l.LoopStep+1 >= l.EndStep
		if done%cfg.logEvery != 0 && !last {
			return nil
		}
		values, err := t.MeanMetrics(metrics)
		if err != nil {
			return err
		}
		if err := t.acc.Log(values, int(t.GlobalStep()), nil); err != nil {
			return fmt.Errorf("gomlx: logging the metrics: %w", err)
		}
		if bar != nil {
			bar.SetNote(summary(values))
			bar.Set(done)
		}
		return nil
	})
	return loop
}

// MeanMetrics returns a step's training metrics (what TrainStep returned,
// or an OnStep hook got) by their short names ("loss+", "~loss", ...),
// averaged over the processes: the global batch's. It is a collective:
// every process must call it.
func (t *Trainer) MeanMetrics(metrics []*tensors.Tensor) (map[string]any, error) {
	ms := t.trainer.TrainMetrics()
	vals := make([]float64, 0, len(metrics))
	var names []string
	for i, m := range metrics {
		if i >= len(ms) || m.Shape().Size() != 1 {
			continue
		}
		vals = append(vals, shapes.ConvertTo[float64](m.Value()))
		names = append(names, ms[i].ShortName())
	}
	if t.acc.NumProcesses() > 1 {
		mean, err := t.acc.Reduce(vals, "mean")
		if err != nil {
			return nil, fmt.Errorf("gomlx: averaging the metrics over the processes: %w", err)
		}
		vals = mean
	}
	out := make(map[string]any, len(vals))
	for i, n := range names {
		out[n] = vals[i]
	}
	return out, nil
}

// summary is the progress bar's note: the loss first, then the others.
func summary(values map[string]any) string {
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		li, lj := strings.Contains(keys[i], "loss"), strings.Contains(keys[j], "loss")
		if li != lj {
			return li
		}
		return keys[i] < keys[j]
	})
	var parts []string
	for _, k := range keys {
		if k == "loss+" || k == "~loss+" {
			continue // the loss with regularization: the same as ~loss without regularizers
		}
		parts = append(parts, fmt.Sprintf("%s %.4g", k, values[k]))
	}
	return strings.Join(parts, "  ")
}
