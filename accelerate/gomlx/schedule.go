package gomlx

import (
	"fmt"
	"math"
)

// Schedule gives the learning rate of each optimizer step: step 0 is the
// first. A Trainer with WithLRSchedule asks it before every optimizer
// step, with the number of optimizer steps taken so far (the global step,
// which LoadState restores: a resumed run goes on with the rate it left
// off at). Accumulation micro-steps do not count: the rate moves when the
// optimizer steps, as PyTorch's schedulers do when stepped with the
// optimizer.
type Schedule interface {
	LearningRate(step int) float64
}

// ScheduleFunc is a Schedule written as a function.
type ScheduleFunc func(step int) float64

// LearningRate implements Schedule.
func (f ScheduleFunc) LearningRate(step int) float64 { return f(step) }

// WarmupCosine is nanoGPT's schedule: a linear warm-up to Peak over
// Warmup steps (step k gets Peak·(k+1)/(Warmup+1)), then a cosine from
// Peak down to Min at step DecaySteps, then Min for every step after.
type WarmupCosine struct {
	Peak, Min          float64
	Warmup, DecaySteps int
}

// LearningRate implements Schedule.
func (s WarmupCosine) LearningRate(step int) float64 {
	switch {
	case step < s.Warmup:
		return s.Peak * float64(step+1) / float64(s.Warmup+1)
	case step > s.DecaySteps:
		return s.Min
	case s.DecaySteps == s.Warmup:
		return s.Peak
	}
	ratio := float64(step-s.Warmup) / float64(s.DecaySteps-s.Warmup)
	return s.Min + 0.5*(1+math.Cos(math.Pi*ratio))*(s.Peak-s.Min)
}

// Validate says what is wrong with s, if anything: a warm-up longer than
// the schedule, negative steps, rates that are not finite and ≥ 0, a
// minimum above the peak.
func (s WarmupCosine) Validate() error {
	switch {
	case s.Warmup < 0 || s.DecaySteps < 0:
		return fmt.Errorf("gomlx: WarmupCosine: negative steps (Warmup %d, DecaySteps %d)", s.Warmup, s.DecaySteps)
	case s.Warmup > s.DecaySteps:
		return fmt.Errorf("gomlx: WarmupCosine: %d warm-up steps is more than the %d steps of the schedule (DecaySteps): "+
			"the warm-up would never end before the decay does", s.Warmup, s.DecaySteps)
	case !finiteNonNegative(s.Peak) || !finiteNonNegative(s.Min):
		return fmt.Errorf("gomlx: WarmupCosine: learning rates Peak %v and Min %v must be finite and ≥ 0", s.Peak, s.Min)
	case s.Min > s.Peak:
		return fmt.Errorf("gomlx: WarmupCosine: the minimum %v is above the peak %v", s.Min, s.Peak)
	}
	return nil
}

func finiteNonNegative(x float64) bool { return x >= 0 && !math.IsInf(x, 0) }

// WithLRSchedule sets the learning rate of every optimizer step from s.
// A Schedule with a Validate method is checked by NewTrainer.
func WithLRSchedule(s Schedule) Option {
	return func(c *config) error {
		if s == nil {
			return fmt.Errorf("gomlx: WithLRSchedule: nil schedule")
		}
		if v, ok := s.(interface{ Validate() error }); ok {
			if err := v.Validate(); err != nil {
				return err
			}
		}
		c.schedule = s
		return nil
	}
}
