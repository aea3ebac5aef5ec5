// Package kwargs holds goaccel's counterparts of Accelerate's kwargs handlers
// (accelerate.utils.dataclasses): the small configuration objects passed to
// NewAccelerator(WithKwargsHandlers(...)) to customise autocast, the
// data-parallel wrapper, the FP8 recipe, the profiler, the gradient scaler and
// the process group.
//
// # Handlers
//
//	Go type                        Accelerate class
//	AutocastKwargs                 AutocastKwargs
//	DistributedDataParallelKwargs  DistributedDataParallelKwargs
//	FP8RecipeKwargs                FP8RecipeKwargs (TERecipeKwargs + MSAMPRecipeKwargs fields)
//	ProfileKwargs                  ProfileKwargs
//	GradScalerKwargs               GradScalerKwargs
//	InitProcessGroupKwargs         InitProcessGroupKwargs
//
// Every field's doc comment names the Accelerate field it mirrors; HANDLERS.md
// in this directory has the full table and what each handler controls in
// goaccel.
//
// # Defaults: the zero value means Accelerate's default
//
// Each handler can be written as a plain struct literal: a field left at its
// zero value means "Accelerate's default". Fields whose Accelerate default is
// True or None (enabled, broadcast_buffers, cache_enabled, the FP8 fields that
// fall back to ACCELERATE_FP8_* variables) are pointers, so that an explicit
// false or 0 can be told apart from "not set"; [Bool] and [Int] build them:
//
//	kwargs.GradScalerKwargs{InitScale: 1024, Enabled: kwargs.Bool(false)}
//
// The NewXxx constructors return the same defaults spelled out explicitly
// (NewGradScalerKwargs().InitScale == 65536); both forms behave identically.
// The methods named Effective*/Resolved return the values with the defaults
// applied. One consequence of the zero-value rule: a numeric field cannot be
// set to exactly 0 when Accelerate's default is non-zero (init_scale,
// growth_factor, backoff_factor, growth_interval, bucket_cap_mb, timeout); 0
// is meaningless or invalid for all of them.
//
// # ToKwargs without touching the environment
//
// Accelerate's to_kwargs() builds a default instance inside
// clear_environment(), which empties os.environ for a moment: not thread-safe.
// Here every ToKwargs is a pure function of the handler's fields. The FP8
// recipe, whose defaults come from ACCELERATE_FP8_* variables, resolves them
// from an explicit map ([FP8RecipeKwargs.Resolve], [EnvMap]); its ToKwargs
// compares against the defaults of an empty environment, as Accelerate does.
//
// # Validation
//
// Each handler has Validate() error with Accelerate's messages where Accelerate
// has one; [ValidateHandlers] checks a whole kwargs_handlers list (one handler
// per kind, the FP8 / mixed_precision rule, unsupported values) and returns a
// [Set] with typed access to each handler, defaults filled in when absent.
package kwargs
