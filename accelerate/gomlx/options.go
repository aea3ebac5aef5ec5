package gomlx

import (
	"fmt"
	"math"
	"os"
	"strings"
)

// Option configures NewTrainer.
type Option func(*config) error

type config struct {
	clipNorm     float64 // > 0: clip the gradients' norm (Accelerate's clip_grad_norm_)
	clipNormType float64
	clipValue    float64 // > 0: clamp every gradient (clip_grad_value_)
	checkEvery   int     // optimizer steps between divergence checks; 0 off, -1 default (debug mode)
	schedule     Schedule
	// separateUpdate keeps the two-graph step where one graph would do
	// (tests and benchmarks compare the two).
	separateUpdate bool
}

func newConfig(opts []Option) (config, error) {
	c := config{clipNormType: 2, checkEvery: -1}
	for _, o := range opts {
		if err := o(&c); err != nil {
			return c, err
		}
	}
	if c.clipNorm > 0 && c.clipValue > 0 {
		return c, fmt.Errorf("gomlx: WithClipGradNorm and WithClipGradValue together: choose one")
	}
	return c, nil
}

// WithClipGradNorm clips the synchronized gradients of every step to a
// total normType-norm of maxNorm, with Accelerator.ClipGradNorm's
// semantics (torch's clip_grad_norm_: the norm of the per-variable norms,
// scaled by min(1, maxNorm/(norm+1e-6)); normType 2 for the Euclidean
// norm, math.Inf(1) for the largest magnitude). It runs in the update
// graph, on the device (with fp16's loss scaler, on the host after
// unscaling); Trainer.GradNorm returns the last step's norm.
func WithClipGradNorm(maxNorm, normType float64) Option {
	return func(c *config) error {
		if math.IsNaN(maxNorm) || maxNorm <= 0 {
			return fmt.Errorf("gomlx: WithClipGradNorm: the max norm %v must be positive", maxNorm)
		}
		if math.IsNaN(normType) || normType <= 0 {
			return fmt.Errorf("gomlx: WithClipGradNorm: norm type %v: use a positive p or math.Inf(1)", normType)
		}
		c.clipNorm, c.clipNormType = maxNorm, normType
		return nil
	}
}

// WithClipGradValue clamps every synchronized gradient to [-v, v]
// (Accelerator.ClipGradValue), in the update graph.
func WithClipGradValue(v float64) Option {
	return func(c *config) error {
		if math.IsNaN(v) || v <= 0 {
			return fmt.Errorf("gomlx: WithClipGradValue: %v must be positive", v)
		}
		c.clipValue = v
		return nil
	}
}

// WithSeparateUpdateGraph keeps the two-graph step (gradients, then the
// update) where the Trainer would apply the optimizer in the training
// graph (see fused.go: one process, no accumulation, scaler or divergence
// check, float32). The results are the same to the bit; benchmarks compare
// the two.
func WithSeparateUpdateGraph() Option {
	return func(c *config) error {
		c.separateUpdate = true
		return nil
	}
}

// WithDivergenceCheck compares every process's masters with process 0's
// every n optimizer steps (0 never). By default it runs every 50 steps
// when ACCELERATE_DEBUG_MODE is on, and never otherwise.
func WithDivergenceCheck(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("gomlx: WithDivergenceCheck: %d steps", n)
		}
		c.checkEvery = n
		return nil
	}
}

// defaultCheckEvery is the divergence check interval in debug mode.
const defaultCheckEvery = 50

// checkEvery is the divergence check interval in optimizer steps (0: off).
func (t *Trainer) checkEvery() int {
	if t.cfg.checkEvery >= 0 {
		return t.cfg.checkEvery
	}
	if t.acc.NumProcesses() > 1 && debugMode() {
		return defaultCheckEvery
	}
	return 0
}

// debugMode reports whether ACCELERATE_DEBUG_MODE is on.
func debugMode() bool {
	switch strings.ToLower(strings.TrimSpace(os.Getenv("ACCELERATE_DEBUG_MODE"))) {
	case "1", "true", "yes":
		return true
	}
	return false
}
