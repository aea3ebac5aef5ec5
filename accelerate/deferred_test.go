package accelerate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/accelerate/safetensors"
)

// lazyModel has no parameters until built (as a GoMLX model before its
// first graph); its parameters are copies of a "device" it loads from.
type lazyModel struct {
	built   bool
	params  [][]float32
	grads   [][]float32
	device  [][]float32 // where the model's values really live
	reloads int
}

func (m *lazyModel) build(vals ...float32) {
	m.built = true
	m.params = [][]float32{append([]float32(nil), vals...)}
	m.grads = [][]float32{make([]float32, len(vals))}
	m.device = [][]float32{append([]float32(nil), vals...)}
}
func (m *lazyModel) Parameters32() [][]float32 { return m.params }
func (m *lazyModel) Gradients32() [][]float32  { return m.grads }
func (m *lazyModel) ParameterNames() []string {
	if !m.built {
		return nil
	}
	return []string{"w"}
}
func (m *lazyModel) ParametersLoaded() error {
	m.reloads++
	m.device = [][]float32{append([]float32(nil), m.params[0]...)}
	return nil
}

// tensorOptimizer keeps its state as tensors (as a GoMLX optimizer does).
type tensorOptimizer struct{ step int64 }

func (o *tensorOptimizer) StateTensors() ([]safetensors.Tensor, error) {
	return []safetensors.Tensor{safetensors.FromInt64s("/global_step", nil, []int64{o.step})}, nil
}
func (o *tensorOptimizer) LoadStateTensors(ts []safetensors.Tensor) error {
	for _, t := range ts {
		if t.Name == "/global_step" {
			v, err := t.Int64s()
			if err != nil {
				return err
			}
			o.step = v[0]
			return nil
		}
	}
	return errors.New("no /global_step")
}

// A model prepared before it has parameters: SaveState refuses it until it
// is built; LoadState before it is built keeps the checkpoint for Build,
// which loads it (and tells the model, Reloadable). A tensor-state
// optimizer is saved as optimizer.safetensors.
func TestDeferredModelAndTensorState(t *testing.T) {
	defer ResetState()
	dir := t.TempDir()
	newAcc := func() (*Accelerator, *lazyModel, *DeferredModel, *tensorOptimizer) {
		t.Helper()
		ResetState()
		a, err := NewAccelerator(withEnv(envMap(nil)))
		if err != nil {
			t.Fatal(err)
		}
		m := &lazyModel{}
		d, err := a.PrepareDeferred(m)
		if err != nil {
			t.Fatal(err)
		}
		opt := &tensorOptimizer{}
		if _, err := a.Prepare(opt); err != nil {
			t.Fatal(err)
		}
		return a, m, d, opt
	}
	a, m, d, opt := newAcc()
	if err := a.SaveState(filepath.Join(dir, "early")); err == nil || !strings.Contains(err.Error(), "has no parameters yet") {
		t.Fatalf("SaveState before the model is built: %v", err)
	}
	m.build(1, 2, 3)
	if _, err := d.Build(); err != nil {
		t.Fatal(err)
	}
	opt.step = 42
	ckpt := filepath.Join(dir, "ckpt")
	if err := a.SaveState(ckpt); err != nil {
		t.Fatal(err)
	}
	if f, err := safetensors.ReadFile(filepath.Join(ckpt, "optimizer.safetensors")); err != nil || len(f.Tensors) != 1 {
		t.Fatalf("optimizer.safetensors: %v %v", f, err)
	}
	if _, err := os.Stat(filepath.Join(ckpt, "optimizer.bin")); !os.IsNotExist(err) {
		t.Errorf("a tensor-state optimizer also wrote optimizer.bin: %v", err)
	}

	b, m2, d2, opt2 := newAcc()
	if err := b.LoadState(ckpt); err != nil {
		t.Fatal(err)
	}
	if opt2.step != 42 {
		t.Errorf("optimizer step after LoadState: %d", opt2.step)
	}
	if d2.DDP() != nil || m2.built {
		t.Fatal("LoadState built the model")
	}
	m2.build(9, 9, 9) // fresh initial values, as a first graph makes them
	if _, err := d2.Build(); err != nil {
		t.Fatal(err)
	}
	if got := m2.device[0]; got[0] != 1 || got[1] != 2 || got[2] != 3 || m2.reloads == 0 {
		t.Fatalf("after Build the model holds %v (reloads %d), want the checkpoint's [1 2 3]", got, m2.reloads)
	}

	// A checkpoint that does not fit the model it was kept for is named
	// when the model is built.
	c, m4, d4, _ := newAcc()
	if err := c.LoadState(ckpt); err != nil {
		t.Fatal(err)
	}
	m4.build(1, 2) // two values where the checkpoint has three
	if _, err := d4.Build(); err == nil || !strings.Contains(err.Error(), "does not fit") {
		t.Fatalf("a checkpoint of another shape: %v", err)
	}
}
