package gomlx

import (
	"path/filepath"
	"sort"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/goaccel/goaccel/accelerate/safetensors"
)

// trainToy runs steps of the toy model with AdamW, clipping and a
// schedule, one graph a step or two, from a checkpoint when from > 0 and
// saving one after saveAt steps; it returns the Trainer, the losses, the
// rates and the gradient norms.
func trainToy(t *testing.T, twoGraphs bool, from, to, saveAt int, ckpt string) (*Trainer, []float32, []float64, []float64) {
	t.Helper()
	acc := newAccelerator(t)
	opts := []Option{WithClipGradNorm(0.5, 2), WithLRSchedule(WarmupCosine{Peak: 0.02, Min: 0.002, Warmup: 3, DecaySteps: 10})}
	if twoGraphs {
		opts = append(opts, WithSeparateUpdateGraph())
	}
	tr, err := NewTrainer(acc, pureGo(t), toyContext(), toyModel, toyLoss, AdamW().WeightDecay(0.1, DecayMatrices), nil, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if tr.fused == twoGraphs {
		t.Fatalf("one graph a step: %v, want %v", tr.fused, !twoGraphs)
	}
	if from > 0 {
		if err := acc.LoadState(ckpt); err != nil {
			t.Fatal(err)
		}
	}
	ds := SkipFirstBatches(&toyDataset{d: newToyData(), batch: 32}, from)
	var losses []float32
	var rates, norms []float64
	for step := from; step < to; step++ {
		_, in, lb, _ := ds.Yield()
		m, err := tr.TrainStep(nil, in, lb)
		if err != nil {
			t.Fatal(err)
		}
		losses = append(losses, tensors.ToScalar[float32](m[0]))
		rates = append(rates, tr.LearningRate())
		norms = append(norms, tr.GradNorm())
		if step+1 == saveAt {
			if err := acc.SaveState(ckpt); err != nil {
				t.Fatal(err)
			}
		}
	}
	return tr, losses, rates, norms
}

// One graph a step computes what two graphs do, to the bit (on the pure-Go
// backend, which runs the same operations in both).
func TestOneGraphIsTwoGraphs(t *testing.T) {
	one, l1, r1, n1 := trainToy(t, false, 0, 8, 0, "")
	two, l2, r2, n2 := trainToy(t, true, 0, 8, 0, "")
	for i := range l1 {
		if l1[i] != l2[i] || r1[i] != r2[i] || n1[i] != n2[i] {
			t.Fatalf("step %d: one graph loss %v rate %v norm %v; two graphs %v %v %v", i, l1[i], r1[i], n1[i], l2[i], r2[i], n2[i])
		}
	}
	if n1[0] <= 0 {
		t.Errorf("gradient norm %v", n1[0])
	}
	a, b := trainableValues(t, one.Masters()), trainableValues(t, two.Masters())
	if len(a) != len(b) {
		t.Fatalf("%d masters, %d", len(a), len(b))
	}
	for name, w := range b {
		if d := maxDiff(a[name], w); d != 0 {
			t.Errorf("%s differs by %g", name, d)
		}
	}
	if one.GlobalStep() != 8 || one.Stats().Steps != 8 {
		t.Errorf("global step %d, steps %d", one.GlobalStep(), one.Stats().Steps)
	}
}

// A checkpoint of a one-graph run holds the tensors a two-graph run's
// holds, by the same names, and a two-graph Trainer resumes from it bit
// for bit (and the other way round).
func TestOneGraphCheckpoints(t *testing.T) {
	dir := t.TempDir()
	oneCkpt, twoCkpt := filepath.Join(dir, "one"), filepath.Join(dir, "two")
	whole, _, _, _ := trainToy(t, false, 0, 10, 5, oneCkpt)
	_, _, _, _ = trainToy(t, true, 0, 5, 5, twoCkpt)
	names := func(ckpt string) []string {
		var out []string
		for _, f := range []string{"model.safetensors", "optimizer.safetensors"} {
			file, err := safetensors.ReadFile(filepath.Join(ckpt, f))
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range file.Tensors {
				out = append(out, f+":"+x.Name)
			}
		}
		sort.Strings(out)
		return out
	}
	a, b := names(oneCkpt), names(twoCkpt)
	if len(a) < 10 || len(a) != len(b) {
		t.Fatalf("one graph saved %v\ntwo graphs saved %v", a, b)
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("one graph saved %v\ntwo graphs saved %v", a, b)
		}
	}
	want := trainableValues(t, whole.Masters())
	for _, c := range []struct {
		twoGraphs bool
		ckpt      string
	}{{true, oneCkpt}, {false, twoCkpt}, {false, oneCkpt}} {
		resumed, _, _, _ := trainToy(t, c.twoGraphs, 5, 10, 0, c.ckpt)
		got := trainableValues(t, resumed.Masters())
		for name, w := range want {
			if d := maxDiff(got[name], w); d != 0 {
				t.Errorf("resumed from %s with two graphs %v: %s differs from the uninterrupted run by %g", filepath.Base(c.ckpt), c.twoGraphs, name, d)
			}
		}
	}
}
