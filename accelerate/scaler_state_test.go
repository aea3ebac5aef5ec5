package accelerate

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/accelerate/nn"
)

// fp16 (a GPU is simulated by CUDA_VISIBLE_DEVICES): the loss scaler's
// state is checkpointed, ClipGradNorm unscales before clipping, and a
// checkpoint with a scaler does not load into a run without one.
func TestScalerCheckpointAndClipUnscale(t *testing.T) {
	defer ResetState()
	gpu := map[string]string{EnvCUDAVisible: "0", EnvMixedPrecision: "fp16"}
	newAcc := func(env map[string]string, dir string) (*Accelerator, *nn.MLP) {
		t.Helper()
		ResetState()
		a, err := NewAccelerator(withEnv(envMap(env)), WithProjectConfiguration(ProjectConfiguration{ProjectDir: dir, AutomaticCheckpointNaming: true}))
		if err != nil {
			t.Fatal(err)
		}
		m, _ := nn.NewMLP([]int{2, 4, 2}, nn.Tanh, 1)
		if _, err := a.Prepare(m, nn.NewSGD(m, 0.1, 0)); err != nil {
			t.Fatal(err)
		}
		return a, m
	}
	dir := t.TempDir()
	a, m := newAcc(gpu, dir)
	s := a.GradScaler()
	start := s.GetScale()
	// An overflowing step: skipped, the scale backs off.
	m.Gradients()[0][0] = math.Inf(1)
	s.Unscale(m.Gradients())
	if stepped, err := s.Step(nil); stepped || err != nil {
		t.Fatalf("overflow step: stepped %v, %v", stepped, err)
	}
	if err := a.SaveState(""); err != nil {
		t.Fatal(err)
	}
	backed := s.GetScale()
	if backed >= start {
		t.Fatalf("scale %v did not back off from %v", backed, start)
	}

	b, _ := newAcc(gpu, dir)
	if b.GradScaler().GetScale() != start {
		t.Fatal("a fresh scaler should start at the initial scale")
	}
	if err := b.LoadState(""); err != nil {
		t.Fatal(err)
	}
	if got := b.GradScaler().GetScale(); got != backed {
		t.Errorf("scale after LoadState %v, want %v", got, backed)
	}

	// ClipGradNorm unscales scaled gradients first (once).
	g := &gradModel{p: [][]float64{{0, 0}}, g: [][]float64{{3 * backed, 4 * backed}}}
	total, err := b.ClipGradNorm(g, 100, 2)
	if err != nil || math.Abs(total-5) > 1e-9 || !b.GradScaler().Unscaled() {
		t.Errorf("ClipGradNorm on scaled gradients: total %v, %v (want the unscaled norm 5)", total, err)
	}
	if total, _ := b.ClipGradNorm(g, 100, 2); math.Abs(total-5) > 1e-9 {
		t.Errorf("second ClipGradNorm unscaled again: total %v", total)
	}

	c, _ := newAcc(map[string]string{}, dir)
	err = c.LoadState(filepath.Join(dir, "checkpoints", "checkpoint_0"))
	if err == nil || !strings.Contains(err.Error(), "the checkpoint has a loss scaler (fp16), this Accelerator has no loss scaler (mixed precision no)") {
		t.Errorf("fp16 checkpoint into a run without scaler: %v", err)
	}
}
