package kwargs

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// FP8EnvPrefix prefixes the environment variables the FP8 recipe falls back
// to (ACCELERATE_FP8_BACKEND, ACCELERATE_FP8_FORMAT, ...).
const FP8EnvPrefix = "ACCELERATE_FP8_"

// FP8RecipeKwargs mirrors Accelerate's FP8RecipeKwargs (deprecated there in
// favour of TERecipeKwargs / MSAMPRecipeKwargs, whose fields it carries).
// Every field is optional: an unset field falls back to its ACCELERATE_FP8_*
// environment variable, then to Accelerate's default (see [FP8RecipeKwargs.Resolve]).
//
// goaccel has no FP8 engine (neither TransformerEngine nor MS-AMP exist for
// Go): the recipe is validated, resolved and reported ([FP8Recipe.Describe]),
// and training runs in the model's own precision.
type FP8RecipeKwargs struct {
	// Backend is backend: "TE" or "MSAMP", any case (env
	// ACCELERATE_FP8_BACKEND; default "TE", as Accelerate's when MS-AMP is
	// not installed).
	Backend string
	// UseAutocastDuringEval is use_autocast_during_eval (env
	// ACCELERATE_FP8_USE_AUTOCAST_DURING_EVAL; default False).
	UseAutocastDuringEval *bool
	// OptLevel is opt_level: "O1" or "O2" (env ACCELERATE_FP8_OPT_LEVEL;
	// default "O2"). Accelerate's FP8RecipeKwargs never runs the MS-AMP
	// initialisation (method resolution order), leaving it None; goaccel
	// resolves it like MSAMPRecipeKwargs does.
	OptLevel string
	// Margin is margin (env ACCELERATE_FP8_MARGIN; default 0).
	Margin *int
	// Interval is interval (env ACCELERATE_FP8_INTERVAL; default 1).
	Interval *int
	// FP8Format is fp8_format: "HYBRID", "E4M3" or "E5M2", any case (env
	// ACCELERATE_FP8_FORMAT; default "HYBRID").
	FP8Format string
	// AmaxHistoryLen is amax_history_len (env
	// ACCELERATE_FP8_AMAX_HISTORY_LEN; default 1024).
	AmaxHistoryLen *int
	// AmaxComputeAlgo is amax_compute_algo: "max" or "most_recent", any
	// case (env ACCELERATE_FP8_AMAX_COMPUTE_ALGO; default "most_recent").
	AmaxComputeAlgo string
	// OverrideLinearPrecision is override_linear_precision, the (fprop,
	// dgrad, wgrad) flags (env ACCELERATE_FP8_OVERRIDE_FPROP/_DGRAD/_WGRAD;
	// default all False).
	OverrideLinearPrecision *[3]bool
	// UseMXFP8BlockScaling is use_mxfp8_block_scaling (env
	// ACCELERATE_FP8_USE_MXFP8_BLOCK_SCALING; default False).
	UseMXFP8BlockScaling *bool
}

// NewFP8RecipeKwargs returns an FP8RecipeKwargs with every field unset
// (resolved from the environment and Accelerate's defaults by Resolve).
func NewFP8RecipeKwargs() FP8RecipeKwargs { return FP8RecipeKwargs{} }

// HandlerName implements [Handler].
func (FP8RecipeKwargs) HandlerName() string { return "FP8RecipeKwargs" }

// FP8Recipe is an FP8RecipeKwargs with every field resolved.
type FP8Recipe struct {
	Backend                 string
	UseAutocastDuringEval   bool
	OptLevel                string
	Margin                  int
	Interval                int
	FP8Format               string
	AmaxHistoryLen          int
	AmaxComputeAlgo         string
	OverrideLinearPrecision [3]bool
	UseMXFP8BlockScaling    bool
}

// DefaultFP8Recipe is the recipe of an empty FP8RecipeKwargs in an empty
// environment.
func DefaultFP8Recipe() FP8Recipe {
	return FP8Recipe{Backend: "TE", OptLevel: "O2", Interval: 1, FP8Format: "HYBRID",
		AmaxHistoryLen: 1024, AmaxComputeAlgo: "most_recent"}
}

// EnvMap turns an os.Environ()-style list into a map (later entries win).
func EnvMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			m[k] = v
		}
	}
	return m
}

// strToBool is Accelerate's str_to_bool.
func strToBool(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "y", "yes", "t", "true", "on", "1":
		return true, nil
	case "n", "no", "f", "false", "off", "0":
		return false, nil
	}
	return false, fmt.Errorf("invalid truth value %s", strings.ToLower(v))
}

// Resolve fills every unset field from env (ACCELERATE_FP8_*; nil means an
// empty environment) and Accelerate's defaults, normalises case and validates,
// in Accelerate's order and with its messages:
//
//	"`backend` must be 'MSAMP' or 'TE' (TransformerEngine) to use `FP8RecipeKwargs`."
//	"`fp8_format` must be one of HYBRID or E4M3 or E5M2."
//	"`amax_compute_algo` must be one of max or most_recent"
//	"`opt_level` must be one of O1 or O2"
//
// It reads nothing but its arguments, so it is safe to call concurrently.
func (k FP8RecipeKwargs) Resolve(env map[string]string) (FP8Recipe, error) {
	r, errs := k.resolve(env)
	return r, errors.Join(errs...)
}

func (k FP8RecipeKwargs) resolve(env map[string]string) (FP8Recipe, []error) {
	var errs []error
	get := func(name, def string) string {
		if v, ok := env[FP8EnvPrefix+name]; ok {
			return v
		}
		return def
	}
	flag := func(p *bool, name string) bool {
		if p != nil {
			return *p
		}
		b, err := strToBool(get(name, "False"))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s%s: %w", FP8EnvPrefix, name, err))
		}
		return b
	}
	integer := func(p *int, name string, def int) int {
		if p != nil {
			return *p
		}
		s, ok := env[FP8EnvPrefix+name]
		if !ok {
			return def
		}
		i, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s%s: invalid literal for int() with base 10: '%s'", FP8EnvPrefix, name, s))
			return def
		}
		return i
	}
	str := func(v, name, def string) string {
		if v != "" {
			return v
		}
		return get(name, def)
	}

	var r FP8Recipe
	r.Backend = strings.ToUpper(str(k.Backend, "BACKEND", "te"))
	if r.Backend != "MSAMP" && r.Backend != "TE" {
		errs = append(errs, errors.New("`backend` must be 'MSAMP' or 'TE' (TransformerEngine) to use `FP8RecipeKwargs`."))
	}
	r.UseAutocastDuringEval = flag(k.UseAutocastDuringEval, "USE_AUTOCAST_DURING_EVAL")
	r.Margin = integer(k.Margin, "MARGIN", 0)
	r.Interval = integer(k.Interval, "INTERVAL", 1)
	r.FP8Format = strings.ToUpper(str(k.FP8Format, "FORMAT", "HYBRID"))
	switch r.FP8Format {
	case "HYBRID", "E4M3", "E5M2":
	default:
		errs = append(errs, errors.New("`fp8_format` must be one of HYBRID or E4M3 or E5M2."))
	}
	r.AmaxComputeAlgo = strings.ToLower(str(k.AmaxComputeAlgo, "AMAX_COMPUTE_ALGO", "most_recent"))
	switch r.AmaxComputeAlgo {
	case "max", "most_recent":
	default:
		errs = append(errs, errors.New("`amax_compute_algo` must be one of max or most_recent"))
	}
	r.AmaxHistoryLen = integer(k.AmaxHistoryLen, "AMAX_HISTORY_LEN", 1024)
	if k.OverrideLinearPrecision != nil {
		r.OverrideLinearPrecision = *k.OverrideLinearPrecision
	} else {
		r.OverrideLinearPrecision = [3]bool{flag(nil, "OVERRIDE_FPROP"), flag(nil, "OVERRIDE_DGRAD"), flag(nil, "OVERRIDE_WGRAD")}
	}
	r.UseMXFP8BlockScaling = flag(k.UseMXFP8BlockScaling, "USE_MXFP8_BLOCK_SCALING")
	r.OptLevel = strings.ToUpper(str(k.OptLevel, "OPT_LEVEL", "O2"))
	if r.OptLevel != "O1" && r.OptLevel != "O2" {
		errs = append(errs, errors.New("`opt_level` must be one of O1 or O2"))
	}
	if r.Margin < 0 {
		errs = append(errs, fmt.Errorf("margin must be >= 0, got %d", r.Margin))
	}
	if r.Interval < 1 {
		errs = append(errs, fmt.Errorf("interval must be >= 1, got %d", r.Interval))
	}
	if r.AmaxHistoryLen < 1 {
		errs = append(errs, fmt.Errorf("amax_history_len must be >= 1, got %d", r.AmaxHistoryLen))
	}
	return r, errs
}

// Validate implements [Handler]: the explicitly set fields (an empty
// environment). Use ValidateEnv to include the ACCELERATE_FP8_* fallbacks.
func (k FP8RecipeKwargs) Validate() error {
	_, err := k.Resolve(nil)
	return err
}

// ValidateEnv is Validate with the ACCELERATE_FP8_* fallbacks read from env.
func (k FP8RecipeKwargs) ValidateEnv(env map[string]string) error {
	_, err := k.Resolve(env)
	return err
}

// ToKwargs implements [Handler]: the explicitly set fields that differ from
// the defaults of an empty environment (Accelerate computes its defaults with
// the environment cleared). Keys: "backend", "use_autocast_during_eval",
// "opt_level", "margin", "interval", "fp8_format", "amax_history_len",
// "amax_compute_algo", "override_linear_precision" ([3]bool),
// "use_mxfp8_block_scaling".
func (k FP8RecipeKwargs) ToKwargs() map[string]any { return k.ToKwargsEnv(nil) }

// ToKwargsEnv is ToKwargs for a handler resolved in env: what Accelerate's
// to_kwargs returns for a handler constructed with that environment.
func (k FP8RecipeKwargs) ToKwargsEnv(env map[string]string) map[string]any {
	r, _ := k.resolve(env) // invalid values are reported as given
	return r.diff(DefaultFP8Recipe())
}

func (r FP8Recipe) diff(d FP8Recipe) map[string]any {
	m := map[string]any{}
	if r.Backend != d.Backend {
		m["backend"] = r.Backend
	}
	if r.UseAutocastDuringEval != d.UseAutocastDuringEval {
		m["use_autocast_during_eval"] = r.UseAutocastDuringEval
	}
	if r.OptLevel != d.OptLevel {
		m["opt_level"] = r.OptLevel
	}
	if r.Margin != d.Margin {
		m["margin"] = r.Margin
	}
	if r.Interval != d.Interval {
		m["interval"] = r.Interval
	}
	if r.FP8Format != d.FP8Format {
		m["fp8_format"] = r.FP8Format
	}
	if r.AmaxHistoryLen != d.AmaxHistoryLen {
		m["amax_history_len"] = r.AmaxHistoryLen
	}
	if r.AmaxComputeAlgo != d.AmaxComputeAlgo {
		m["amax_compute_algo"] = r.AmaxComputeAlgo
	}
	if r.OverrideLinearPrecision != d.OverrideLinearPrecision {
		m["override_linear_precision"] = r.OverrideLinearPrecision
	}
	if r.UseMXFP8BlockScaling != d.UseMXFP8BlockScaling {
		m["use_mxfp8_block_scaling"] = r.UseMXFP8BlockScaling
	}
	return m
}

// Describe is the honest report the Accelerator prints when an FP8 recipe is
// passed: the recipe is accepted, but nothing runs in FP8.
func (r FP8Recipe) Describe() string {
	var opts string
	if r.Backend == "MSAMP" {
		opts = fmt.Sprintf("backend MSAMP, opt_level %s", r.OptLevel)
	} else {
		opts = fmt.Sprintf("backend TE, format %s, margin %d, interval %d, amax_history_len %d, amax_compute_algo %s",
			r.FP8Format, r.Margin, r.Interval, r.AmaxHistoryLen, r.AmaxComputeAlgo)
	}
	return "FP8RecipeKwargs accepted (" + opts + "): goaccel has no FP8 engine (TransformerEngine and MS-AMP " +
		"have no Go counterpart); training runs in the model's own precision (float32/float64) and the recipe is only recorded."
}
