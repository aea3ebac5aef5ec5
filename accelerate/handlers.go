package accelerate

import (
	"fmt"

	"github.com/goaccel/goaccel/accelerate/amp"
	"github.com/goaccel/goaccel/accelerate/kwargs"
)

// WithKwargsHandlers passes Accelerate's kwargs_handlers: values or pointers
// of the six handler types of package accelerate/kwargs (AutocastKwargs,
// DistributedDataParallelKwargs, FP8RecipeKwargs, GradScalerKwargs,
// InitProcessGroupKwargs, ProfileKwargs). NewAccelerator checks them with
// kwargs.ValidateHandlers against the mixed precision in effect and returns
// its errors as they are (a second handler of a kind, an FP8 recipe without
// mixed_precision "fp8", an unsupported type, an invalid field).
//
// InitProcessGroupKwargs is applied before the process group is joined:
// its Timeout bounds the rendezvous and every collective (it wins over
// WithTimeout), its Backend is checked ("nccl" needs the GPU path) and its
// InitMethod "tcp://host:port" names the rendezvous endpoint. It only takes
// effect in the first NewAccelerator of a process (later ones share the
// joined group, as Accelerate's shared state does). Repeated calls add to
// the list.
func WithKwargsHandlers(handlers ...any) Option {
	return func(c *config) error {
		c.handlers = append(c.handlers, handlers...)
		return nil
	}
}

// applyHandlers validates the handlers (unless newState already did, before
// joining), prints their notes on the main process and builds the gradient
// scaler.
func (a *Accelerator) applyHandlers(c *config) error {
	var set kwargs.Set
	if c.handlerSet != nil {
		set = *c.handlerSet
	} else {
		var err error
		if set, err = kwargs.ValidateHandlers(c.handlers, a.st.mixedPrecision); err != nil {
			return err
		}
	}
	a.handlers = set
	if a.IsMainProcess() {
		for _, n := range set.Notes() {
			fmt.Fprintln(a.st.out, n)
		}
	}
	if a.st.mixedPrecision == "fp16" {
		s, err := amp.NewGradScaler(set.GradScaler())
		if err != nil {
			return fmt.Errorf("accelerate: %w", err)
		}
		a.scaler = s
	}
	return nil
}

// KwargsHandlers is the validated kwargs_handlers set; an absent handler
// reads as its defaults.
func (a *Accelerator) KwargsHandlers() kwargs.Set { return a.handlers }

// GradScaler is the dynamic loss scaler of fp16 mixed precision, built from
// GradScalerKwargs (defaults when none was passed); nil unless
// MixedPrecision is "fp16". Accelerate creates it only for fp16 on a
// non-CPU device; goaccel's fp16 is simulated (Go arithmetic rounded with
// package amp) in every case, and the process state refuses fp16 on the CPU
// device with Accelerate's error, so a scaler exists whenever fp16 is in
// effect. GradScalerKwargs{Enabled: false} gives a disabled scaler that
// passes everything through.
func (a *Accelerator) GradScaler() *amp.GradScaler { return a.scaler }

// Autocast is the AutocastKwargs passed (Accelerate's defaults when none
// was): goaccel has no operator-level autocast, see AutocastEnabled.
func (a *Accelerator) Autocast() kwargs.AutocastKwargs { return a.handlers.Autocast() }

// AutocastEnabled reports whether the mixed-precision region is on: a
// precision other than "no" and AutocastKwargs.Enabled. Code that simulates
// reduced precision (amp.Simulate and friends) should honour it.
func (a *Accelerator) AutocastEnabled() bool {
	return a.st.mixedPrecision != "no" && a.handlers.Autocast().IsEnabled()
}

// FP8Recipe is the FP8 recipe in effect with mixed precision "fp8" (the
// FP8RecipeKwargs passed, else the default recipe); ok is false for other
// precisions. goaccel has no FP8 engine: the recipe is accepted, validated
// and reported (NewAccelerator prints what it does), and nothing runs in
// FP8.
func (a *Accelerator) FP8Recipe() (recipe kwargs.FP8Recipe, ok bool) {
	if a.st.mixedPrecision != "fp8" {
		return kwargs.FP8Recipe{}, false
	}
	_, r, _ := a.handlers.FP8Recipe()
	return r, true
}
