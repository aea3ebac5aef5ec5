package amp

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/goaccel/goaccel/accelerate/kwargs"
)

// ErrNotUnscaled is returned by Step when the scaler is enabled and the
// gradients were not unscaled since the last step, so overflow could not be
// checked.
var ErrNotUnscaled = errors.New("amp: GradScaler.Step called before Unscale: unscale this step's gradients first so that inf/NaN can be detected")

// GradScaler is torch.amp.GradScaler's dynamic loss scaling for a Go
// training loop:
//
//	loss := forward()
//	backward(scaler.Scale(loss))          // gradients of the scaled loss
//	scaler.Unscale(grads)                 // divide by the scale, look for inf/NaN
//	stepped, err := scaler.Step(func() { optimizer.Step() })
//
// Step skips the update when an inf or NaN was found and multiplies the scale
// by BackoffFactor; after GrowthInterval consecutive clean steps it multiplies
// the scale by GrowthFactor. A disabled scaler passes everything through
// (Scale returns loss, Unscale only checks, Step always steps). Safe for
// concurrent use.
type GradScaler struct {
	mu             sync.Mutex
	scale          float64
	growthFactor   float64
	backoffFactor  float64
	growthInterval int
	enabled        bool

	growthTracker int
	foundInf      bool
	unscaled      bool
	steps         int
	skipped       int
}

// ScalerState is a snapshot of a GradScaler.
type ScalerState struct {
	Scale          float64 // current loss scale
	GrowthFactor   float64
	BackoffFactor  float64
	GrowthInterval int
	Enabled        bool
	GrowthTracker  int  // consecutive clean steps since the last growth or backoff
	FoundInf       bool // whether the gradients unscaled since the last step held inf/NaN
	Steps          int  // Step calls
	SkippedSteps   int  // steps skipped for inf/NaN
}

// NewGradScaler builds a scaler from GradScalerKwargs (defaults filled in).
func NewGradScaler(k kwargs.GradScalerKwargs) (*GradScaler, error) {
	if err := k.Validate(); err != nil {
		return nil, fmt.Errorf("amp: GradScalerKwargs: %w", err)
	}
	r := k.Resolved()
	return &GradScaler{
		scale:          r.InitScale,
		growthFactor:   r.GrowthFactor,
		backoffFactor:  r.BackoffFactor,
		growthInterval: r.GrowthInterval,
		enabled:        *r.Enabled,
	}, nil
}

// IsEnabled reports whether the scaler scales.
func (s *GradScaler) IsEnabled() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.enabled
}

// GetScale is the current scale (1 when disabled).
func (s *GradScaler) GetScale() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.enabled {
		return 1
	}
	return s.scale
}

// Scale returns loss multiplied by the current scale (loss itself when
// disabled).
func (s *GradScaler) Scale(loss float64) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.enabled {
		return loss
	}
	return loss * s.scale
}

// Unscale divides every gradient by the current scale in place and reports
// whether any is inf or NaN (the verdict Step uses). It may be called more
// than once per step (for several gradient sets); the verdicts accumulate.
// A disabled scaler leaves the gradients as they are and only checks them.
func (s *GradScaler) Unscale(grads [][]float64) (foundInf bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	inv := 1.0
	if s.enabled {
		inv = 1 / s.scale
	}
	for _, g := range grads {
		for i, v := range g {
			v *= inv
			g[i] = v
			if math.IsInf(v, 0) || math.IsNaN(v) {
				foundInf = true
			}
		}
	}
	s.foundInf = s.foundInf || foundInf
	s.unscaled = true
	return foundInf
}

// Unscale32 is Unscale for float32 gradients (multiplied by float32(1/scale),
// as torch does).
func (s *GradScaler) Unscale32(grads [][]float32) (foundInf bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	inv := float32(1)
	if s.enabled {
		inv = float32(1 / s.scale)
	}
	for _, g := range grads {
		for i, v := range g {
			v *= inv
			g[i] = v
			if f := float64(v); math.IsInf(f, 0) || math.IsNaN(f) {
				foundInf = true
			}
		}
	}
	s.foundInf = s.foundInf || foundInf
	s.unscaled = true
	return foundInf
}

// AddFoundInf records that gradients unscaled elsewhere held inf or NaN:
// with sharded gradients, another process's share (torch's
// ShardedGradScaler all-reduces the verdict the same way), so that every
// process skips the same step. It does nothing when found is false.
func (s *GradScaler) AddFoundInf(found bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.foundInf = s.foundInf || found
}

// Step runs fn (the optimizer step) unless the gradients unscaled since the
// last Step held inf/NaN, then updates the scale (torch's scaler.step +
// scaler.update): after a skipped step the scale is multiplied by
// BackoffFactor and the clean-step count restarts; after GrowthInterval
// consecutive clean steps it is multiplied by GrowthFactor (if the result is
// finite). stepped reports whether fn ran. With the scaler enabled, Unscale
// (or Unscale32) must have been called since the last Step; otherwise Step
// returns ErrNotUnscaled without running fn or touching the scale. fn may be
// nil. A disabled scaler always runs fn.
func (s *GradScaler) Step(fn func()) (stepped bool, err error) {
	s.mu.Lock()
	if !s.enabled {
		s.steps++
		s.unscaled, s.foundInf = false, false
		s.mu.Unlock()
		if fn != nil {
			fn()
		}
		return true, nil
	}
	if !s.unscaled {
		s.mu.Unlock()
		return false, ErrNotUnscaled
	}
	skip := s.foundInf
	s.mu.Unlock()

	if !skip && fn != nil {
		fn()
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps++
	if skip {
		s.skipped++
		s.scale *= s.backoffFactor
		s.growthTracker = 0
	} else {
		s.growthTracker++
		if s.growthTracker == s.growthInterval {
			if ns := s.scale * s.growthFactor; !math.IsInf(ns, 0) && !math.IsNaN(ns) {
				s.scale = ns
			}
			s.growthTracker = 0
		}
	}
	s.unscaled, s.foundInf = false, false
	return !skip, nil
}

// Unscaled reports whether Unscale (or Unscale32) was called since the last
// Step: Accelerator.ClipGradNorm unscales the gradients first unless they
// already are, as Accelerate's clip_grad_norm_ does.
func (s *GradScaler) Unscaled() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unscaled
}

// State returns a snapshot of the scaler.
func (s *GradScaler) State() ScalerState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ScalerState{
		Scale:          s.scale,
		GrowthFactor:   s.growthFactor,
		BackoffFactor:  s.backoffFactor,
		GrowthInterval: s.growthInterval,
		Enabled:        s.enabled,
		GrowthTracker:  s.growthTracker,
		FoundInf:       s.foundInf,
		Steps:          s.steps,
		SkippedSteps:   s.skipped,
	}
}

// LoadState restores the scale and growth tracker of a snapshot (for
// checkpoints: torch's scaler.load_state_dict).
func (s *GradScaler) LoadState(st ScalerState) error {
	if !(st.Scale > 0) || math.IsInf(st.Scale, 0) {
		return fmt.Errorf("amp: LoadState: scale must be positive and finite, got %v", st.Scale)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scale = st.Scale
	s.growthTracker = st.GrowthTracker
	return nil
}
