package kwargs

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// ErrUnsupportedHandler is wrapped by the error for a kwargs_handlers entry
// that is not one of this package's handlers.
var ErrUnsupportedHandler = errors.New("unsupported kwargs handler")

// Set is a validated kwargs_handlers list, with typed access to each
// handler. An absent handler reads as its defaults. The zero Set is the empty
// list.
type Set struct {
	autocast *AutocastKwargs
	ddp      *DistributedDataParallelKwargs
	fp8      *FP8RecipeKwargs
	profile  *ProfileKwargs
	scaler   *GradScalerKwargs
	init     *InitProcessGroupKwargs

	order          []Handler
	fp8Recipe      FP8Recipe
	mixedPrecision string
}

// ValidateHandlers checks a kwargs_handlers list as Accelerator.__init__ does
// and returns its [Set]. Each entry must be one of this package's six handler
// types, as a value or a non-nil pointer; anything else yields
// "Unsupported kwargs handler passed: %T ..." (wrapping ErrUnsupportedHandler).
// Each handler is validated (its error is wrapped with its position and
// name); a second handler of a kind yields "You can only pass one `X` in
// `kwargs_handlers`."; an FP8RecipeKwargs while mixedPrecision is not "fp8"
// yields "Passing in an FP8 configuration requires setting
// `mixed_precision='fp8'`.".
//
// The FP8 recipe's ACCELERATE_FP8_* fallbacks are read from a snapshot of
// the process environment (os.Environ, read only); use ValidateHandlersEnv to
// pass the environment explicitly.
func ValidateHandlers(handlers []any, mixedPrecision string) (Set, error) {
	return ValidateHandlersEnv(handlers, mixedPrecision, EnvMap(os.Environ()))
}

// ValidateHandlersEnv is ValidateHandlers with an explicit environment for
// the FP8 recipe's fallbacks (nil: empty). It reads nothing else.
func ValidateHandlersEnv(handlers []any, mixedPrecision string, env map[string]string) (Set, error) {
	s := Set{mixedPrecision: normPrecision(mixedPrecision)}
	for i, h := range handlers {
		kh, err := asHandler(h)
		if err != nil {
			return Set{}, err
		}
		verr := kh.Validate()
		if f, ok := kh.(FP8RecipeKwargs); ok {
			verr = f.ValidateEnv(env)
		}
		if verr != nil {
			return Set{}, fmt.Errorf("kwargs_handlers[%d] (%s): %w", i, kh.HandlerName(), verr)
		}
		dup := false
		switch v := kh.(type) {
		case AutocastKwargs:
			dup = s.autocast != nil
			s.autocast = &v
		case DistributedDataParallelKwargs:
			dup = s.ddp != nil
			s.ddp = &v
		case FP8RecipeKwargs:
			dup = s.fp8 != nil
			s.fp8 = &v
		case ProfileKwargs:
			dup = s.profile != nil
			s.profile = &v
		case GradScalerKwargs:
			dup = s.scaler != nil
			s.scaler = &v
		case InitProcessGroupKwargs:
			dup = s.init != nil
			s.init = &v
		}
		if dup {
			return Set{}, fmt.Errorf("You can only pass one `%s` in `kwargs_handlers`.", kh.HandlerName())
		}
		s.order = append(s.order, kh)
	}
	if s.fp8 != nil {
		if s.mixedPrecision != "fp8" {
			return Set{}, errors.New("Passing in an FP8 configuration requires setting `mixed_precision='fp8'`.")
		}
		r, err := s.fp8.Resolve(env)
		if err != nil { // already validated above; kept for safety
			return Set{}, fmt.Errorf("FP8RecipeKwargs: %w", err)
		}
		s.fp8Recipe = r
	}
	return s, nil
}

func normPrecision(p string) string {
	p = strings.ToLower(strings.TrimSpace(p))
	if p == "" {
		return "no"
	}
	return p
}

// asHandler accepts the six handler types as values or non-nil pointers and
// returns the value form.
func asHandler(h any) (Handler, error) {
	switch v := h.(type) {
	case AutocastKwargs, DistributedDataParallelKwargs, FP8RecipeKwargs, ProfileKwargs, GradScalerKwargs, InitProcessGroupKwargs:
		return v.(Handler), nil
	case *AutocastKwargs:
		if v != nil {
			return *v, nil
		}
	case *DistributedDataParallelKwargs:
		if v != nil {
			return *v, nil
		}
	case *FP8RecipeKwargs:
		if v != nil {
			return *v, nil
		}
	case *ProfileKwargs:
		if v != nil {
			return *v, nil
		}
	case *GradScalerKwargs:
		if v != nil {
			return *v, nil
		}
	case *InitProcessGroupKwargs:
		if v != nil {
			return *v, nil
		}
	default:
		return nil, fmt.Errorf("Unsupported kwargs handler passed: %T (%v), must be one of kwargs.AutocastKwargs, "+
			"kwargs.DistributedDataParallelKwargs, kwargs.FP8RecipeKwargs, kwargs.ProfileKwargs, "+
			"kwargs.GradScalerKwargs, kwargs.InitProcessGroupKwargs (value or pointer): %w", h, h, ErrUnsupportedHandler)
	}
	return nil, fmt.Errorf("Unsupported kwargs handler passed: nil %T: %w", h, ErrUnsupportedHandler)
}

// MixedPrecision is the (normalised) mixed_precision the set was validated
// against: "no", "fp16", "bf16" or "fp8".
func (s Set) MixedPrecision() string {
	if s.mixedPrecision == "" {
		return "no"
	}
	return s.mixedPrecision
}

// Handlers returns the handlers in the order they were passed (value form).
func (s Set) Handlers() []Handler { return append([]Handler(nil), s.order...) }

// Has reports whether a handler of the Accelerate class name was passed
// ("GradScalerKwargs", "DistributedDataParallelKwargs", ...).
func (s Set) Has(name string) bool {
	for _, h := range s.order {
		if h.HandlerName() == name {
			return true
		}
	}
	return false
}

// Autocast is the AutocastKwargs passed, or the defaults.
func (s Set) Autocast() AutocastKwargs {
	if s.autocast != nil {
		return *s.autocast
	}
	return NewAutocastKwargs()
}

// DDP is the DistributedDataParallelKwargs passed, or the defaults.
func (s Set) DDP() DistributedDataParallelKwargs {
	if s.ddp != nil {
		return *s.ddp
	}
	return NewDistributedDataParallelKwargs()
}

// GradScaler is the GradScalerKwargs passed, or the defaults.
func (s Set) GradScaler() GradScalerKwargs {
	if s.scaler != nil {
		return *s.scaler
	}
	return NewGradScalerKwargs()
}

// InitProcessGroup is the InitProcessGroupKwargs passed, or the defaults.
func (s Set) InitProcessGroup() InitProcessGroupKwargs {
	if s.init != nil {
		return *s.init
	}
	return NewInitProcessGroupKwargs()
}

// Profile is the ProfileKwargs passed, or the defaults.
func (s Set) Profile() ProfileKwargs {
	if s.profile != nil {
		return *s.profile
	}
	return NewProfileKwargs()
}

// FP8Recipe is the FP8RecipeKwargs passed, and its resolved recipe; ok is
// false when none was passed (mixed_precision "fp8" without a recipe then
// uses DefaultFP8Recipe, as Accelerate creates a default recipe handler).
func (s Set) FP8Recipe() (k FP8RecipeKwargs, r FP8Recipe, ok bool) {
	if s.fp8 == nil {
		return FP8RecipeKwargs{}, DefaultFP8Recipe(), false
	}
	return *s.fp8, s.fp8Recipe, true
}

// Notes are lines for the Accelerator to print at construction: what the
// passed handlers do (and do not do) in goaccel.
func (s Set) Notes() []string {
	var n []string
	mp := s.MixedPrecision()
	if mp == "fp8" {
		_, r, _ := s.FP8Recipe()
		n = append(n, r.Describe())
	}
	if s.scaler != nil && mp != "fp16" {
		n = append(n, fmt.Sprintf("GradScalerKwargs passed but mixed_precision is %q: the gradient scaler is only used with fp16", mp))
	}
	if s.autocast != nil {
		n = append(n, s.autocast.Describe())
	}
	if s.ddp != nil {
		n = append(n, s.ddp.Describe())
	}
	return n
}
