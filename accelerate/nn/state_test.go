package nn

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

// trainSteps runs k optimizer steps of full-batch training.
func trainSteps(m *MLP, opt Optimizer, k int) {
	x, y := spirals(32, 0.05, 3)
	for i := 0; i < k; i++ {
		opt.ZeroGrad()
		_, g := CrossEntropy(m.Forward(x), y)
		m.Backward(g)
		opt.Step()
	}
}

func TestOptimizerStateResumesBitForBit(t *testing.T) {
	for _, kind := range []string{"sgd", "adam"} {
		t.Run(kind, func(t *testing.T) {
			newOpt := func(m *MLP) Optimizer {
				if kind == "sgd" {
					o := NewSGD(m, 0.1, 0.9)
					o.WeightDecay = 1e-3
					return o
				}
				o := NewAdam(m, 0.01)
				o.WeightDecay = 1e-4
				return o
			}
			ref, _ := NewMLP([]int{2, 8, 2}, Tanh, 5)
			refOpt := newOpt(ref)
			trainSteps(ref, refOpt, 6)

			// Save after 3 steps, restore into a fresh model and optimizer
			// (with other hyperparameters), run 3 more.
			m, _ := NewMLP([]int{2, 8, 2}, Tanh, 5)
			opt := newOpt(m)
			trainSteps(m, opt, 3)
			state, err := opt.(interface{ MarshalBinary() ([]byte, error) }).MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			params := m.StateDict()
			m2, _ := NewMLP([]int{2, 8, 2}, Tanh, 99)
			if err := m2.LoadStateDict(params); err != nil {
				t.Fatal(err)
			}
			var opt2 Optimizer
			if kind == "sgd" {
				opt2 = NewSGD(m2, 1, 0)
			} else {
				opt2 = NewAdam(m2, 1)
			}
			if err := opt2.(interface{ UnmarshalBinary([]byte) error }).UnmarshalBinary(state); err != nil {
				t.Fatal(err)
			}
			trainSteps(m2, opt2, 3)
			for i, p := range ref.Parameters() {
				for j := range p {
					if math.Float64bits(p[j]) != math.Float64bits(m2.Parameters()[i][j]) {
						t.Fatalf("parameter %d[%d]: %v after resuming, %v uninterrupted", i, j, m2.Parameters()[i][j], p[j])
					}
				}
			}
			if a, ok := opt2.(*Adam); ok && a.Steps() != 6 {
				t.Errorf("Adam step %d, want 6", a.Steps())
			}
		})
	}
}

func TestOptimizerStateErrors(t *testing.T) {
	small, _ := NewMLP([]int{2, 4, 2}, Tanh, 1)
	big, _ := NewMLP([]int{2, 8, 2}, Tanh, 1)
	deep, _ := NewMLP([]int{2, 4, 4, 2}, Tanh, 1)
	a := NewAdam(small, 0.1)
	trainSteps(small, a, 1)
	st, _ := a.MarshalBinary()
	if err := NewAdam(big, 0.1).UnmarshalBinary(st); err == nil || !strings.Contains(err.Error(), "exp_avg.0 has 8 elements, this model's parameter 0 has 16") {
		t.Errorf("other width: %v", err)
	}
	if err := NewAdam(deep, 0.1).UnmarshalBinary(st); err == nil || !strings.Contains(err.Error(), "was saved for a model with 4 parameter tensors, this one has 6") {
		t.Errorf("other depth: %v", err)
	}
	if err := NewSGD(small, 0.1, 0.9).UnmarshalBinary(st); err == nil || !strings.Contains(err.Error(), "the state is of a Adam optimizer, not SGD") {
		t.Errorf("other optimizer: %v", err)
	}
	if err := NewSGD(small, 0.1, 0.9).UnmarshalBinary([]byte("junk")); err == nil || !strings.Contains(err.Error(), "SGD state") {
		t.Errorf("junk: %v", err)
	}
	// A fresh optimizer (no step yet) round-trips too.
	fresh := NewAdam(small, 0.5)
	st, _ = fresh.MarshalBinary()
	back := NewAdam(small, 0.1)
	if err := back.UnmarshalBinary(st); err != nil || back.LR != 0.5 || back.Steps() != 0 {
		t.Errorf("fresh Adam: lr %v steps %d, %v", back.LR, back.Steps(), err)
	}
}

func TestParameterNamesFollowTorchSequential(t *testing.T) {
	m, _ := NewMLP([]int{2, 4, 4, 3}, ReLU, 1)
	want := []string{"0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"}
	if got := m.ParameterNames(); !reflect.DeepEqual(got, want) {
		t.Errorf("names %v", got)
	}
}
