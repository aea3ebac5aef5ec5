package gomlx

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/accelerate"
)

// nanoGPT's get_lr for its baby run: lr 1e-3, min 1e-4, 100 warm-up steps,
// decay over 2000.
func TestWarmupCosineIsNanoGPTs(t *testing.T) {
	s := WarmupCosine{Peak: 1e-3, Min: 1e-4, Warmup: 100, DecaySteps: 2000}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		step int
		want float64
	}{
		{0, 1e-3 * 1 / 101},
		{50, 1e-3 * 51 / 101},
		{99, 1e-3 * 100 / 101},
		{100, 1e-3},
		{1050, 1e-4 + 0.5*(1e-3-1e-4)}, // halfway: cos(π/2) = 0
		{2000, 1e-4},
		{2001, 1e-4},
		{5000, 1e-4}, // it holds its minimum
	} {
		if got := s.LearningRate(c.step); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("step %d: %v, want %v", c.step, got, c.want)
		}
	}
	for _, c := range []struct {
		s    WarmupCosine
		want string
	}{
		{WarmupCosine{Peak: 1e-3, Min: 1e-4, Warmup: 3000, DecaySteps: 2000}, "3000 warm-up steps is more than the 2000 steps"},
		{WarmupCosine{Peak: 1e-3, Min: 1e-2, Warmup: 10, DecaySteps: 20}, "the minimum 0.01 is above the peak 0.001"},
		{WarmupCosine{Peak: math.Inf(1), Warmup: 1, DecaySteps: 2}, "must be finite"},
		{WarmupCosine{Peak: 1, Warmup: -1, DecaySteps: 2}, "negative steps"},
	} {
		_, err := NewTrainer(newAccelerator(t), pureGo(t), toyContext(), toyModel, toyLoss, AdamW(), nil, nil, WithLRSchedule(c.s))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: want an error containing %q, got %v", c.s, c.want, err)
		}
	}
}

// The schedule moves with optimizer steps: with 2 accumulation
// micro-steps per optimizer step, optimizer step k (whatever the
// micro-steps) runs at the rate of step k.
func TestScheduleStepsWithTheOptimizer(t *testing.T) {
	s := ScheduleFunc(func(step int) float64 { return 0.001 * float64(step+1) })
	acc := newAccelerator(t, accelerate.WithGradientAccumulationSteps(2))
	tr, err := NewTrainer(acc, pureGo(t), toyContext(), toyModel, toyLoss, AdamW(), nil, nil, WithLRSchedule(s))
	if err != nil {
		t.Fatal(err)
	}
	ds := &toyDataset{d: newToyData(), batch: 16}
	var rates []float64
	for range 8 {
		_, in, lb, _ := ds.Yield()
		if _, err := tr.TrainStep(nil, in, lb); err != nil {
			t.Fatal(err)
		}
		rates = append(rates, tr.LearningRate())
	}
	want := []float64{0, 0.001, 0.001, 0.002, 0.002, 0.003, 0.003, 0.004}
	for i := range want {
		if math.Abs(rates[i]-want[i]) > 1e-12 {
			t.Fatalf("after micro-step %d the rate is %v: %v, want %v", i+1, rates[i], rates, want)
		}
	}
	lrVar := learningRateVar(tr.Masters())
	if got := float64(lrVar.MustValue().Value().(float32)); math.Abs(got-0.004) > 1e-9 {
		t.Errorf("the optimizer's learning-rate variable holds %v, want 0.004", got)
	}
}

// A schedule comes back after LoadState: a run saved at step 5 and
// resumed in a new Trainer continues with the rates of steps 5, 6, ... and
// ends with the uninterrupted run's weights, bit for bit.
func TestScheduleResumesAfterLoadState(t *testing.T) {
	sched := WarmupCosine{Peak: 0.02, Min: 0.002, Warmup: 3, DecaySteps: 8}
	run := func(t *testing.T, from, to int, ckpt string, save bool) (*Trainer, []float64) {
		acc := newAccelerator(t)
		tr, err := NewTrainer(acc, pureGo(t), toyContext(), toyModel, toyLoss,
			AdamW().WeightDecay(0.1, DecayMatrices), nil, nil, WithLRSchedule(sched), WithClipGradNorm(0.5, 2))
		if err != nil {
			t.Fatal(err)
		}
		if from > 0 {
			if err := acc.LoadState(ckpt); err != nil {
				t.Fatal(err)
			}
		}
		ds := SkipFirstBatches(&toyDataset{d: newToyData(), batch: 32}, from)
		var rates []float64
		for step := from; step < to; step++ {
			_, in, lb, _ := ds.Yield()
			if _, err := tr.TrainStep(nil, in, lb); err != nil {
				t.Fatal(err)
			}
			rates = append(rates, tr.LearningRate())
			if save && step+1 == 5 {
				if err := acc.SaveState(ckpt); err != nil {
					t.Fatal(err)
				}
			}
		}
		return tr, rates
	}
	ckpt := filepath.Join(t.TempDir(), "ckpt")
	whole, wholeRates := run(t, 0, 12, ckpt, true)
	want := trainableValues(t, whole.Masters())
	resumed, rates := run(t, 5, 12, ckpt, false)
	for i, r := range rates {
		if r != wholeRates[5+i] || r != sched.LearningRate(5+i) {
			t.Fatalf("resumed step %d ran at %v; the uninterrupted run at %v, the schedule says %v", 5+i, r, wholeRates[5+i], sched.LearningRate(5+i))
		}
	}
	got := trainableValues(t, resumed.Masters())
	for name, w := range want {
		if d := maxDiff(got[name], w); d != 0 {
			t.Errorf("%s differs from the uninterrupted run by %g", name, d)
		}
	}
}
