package kwargs

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// Accelerate's defaults (utils/dataclasses.py) as literal values.
func TestDefaultsMatchAccelerate(t *testing.T) {
	a := NewAutocastKwargs()
	if !a.IsEnabled() || a.CacheEnabled != nil || !(AutocastKwargs{}).IsEnabled() {
		t.Errorf("autocast defaults: enabled=True, cache_enabled=None; got %+v", a)
	}

	for name, d := range map[string]DistributedDataParallelKwargs{"New": NewDistributedDataParallelKwargs(), "zero": {}} {
		if d.Dim != 0 || !d.BroadcastBuffersEnabled() || d.EffectiveBucketCapMB() != 25 || d.FindUnusedParameters ||
			d.CheckReduction || d.GradientAsBucketView || d.StaticGraph || d.EffectiveCommHook() != "no" ||
			d.EffectiveCommWrapper() != "no" || len(d.CommStateOption) != 0 {
			t.Errorf("%s DDP defaults wrong: %+v", name, d)
		}
		if d.BucketCapBytes() != 25*1024*1024 {
			t.Errorf("%s bucket cap bytes = %d", name, d.BucketCapBytes())
		}
	}

	for name, g := range map[string]GradScalerKwargs{"New": NewGradScalerKwargs(), "zero": {}} {
		r := g.Resolved()
		if r.InitScale != 65536.0 || r.GrowthFactor != 2.0 || r.BackoffFactor != 0.5 || r.GrowthInterval != 2000 || !*r.Enabled {
			t.Errorf("%s grad scaler defaults wrong: %+v", name, r)
		}
	}

	ip := NewInitProcessGroupKwargs()
	if ip.EffectiveBackend(true) != "nccl" || ip.EffectiveBackend(false) != "gloo" {
		t.Errorf("backend defaults: %q %q", ip.EffectiveBackend(true), ip.EffectiveBackend(false))
	}
	if ip.EffectiveTimeout("nccl") != 600*time.Second || ip.EffectiveTimeout("gloo") != 1800*time.Second {
		t.Errorf("timeouts: %v %v", ip.EffectiveTimeout("nccl"), ip.EffectiveTimeout("gloo"))
	}
	if (InitProcessGroupKwargs{Timeout: 42 * time.Second}).EffectiveTimeout("nccl") != 42*time.Second {
		t.Error("explicit timeout ignored")
	}
	if ip.InitMethod != "" {
		t.Error("init_method default is None")
	}

	p := NewProfileKwargs()
	if p.Activities != nil || p.ScheduleOption != nil || p.OnTraceReady != nil || p.RecordShapes || p.ProfileMemory ||
		p.WithStack || p.WithFlops || p.WithModules || p.OutputTraceDir != "" {
		t.Errorf("profile defaults: %+v", p)
	}
	if got := p.EffectiveActivities(false); !reflect.DeepEqual(got, []string{"cpu"}) {
		t.Errorf("default activities without GPU = %v", got)
	}
	if got := p.EffectiveActivities(true); !reflect.DeepEqual(got, []string{"cpu", "cuda"}) {
		t.Errorf("default activities with GPU = %v", got)
	}

	r, err := NewFP8RecipeKwargs().Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := FP8Recipe{Backend: "TE", OptLevel: "O2", Margin: 0, Interval: 1, FP8Format: "HYBRID", AmaxHistoryLen: 1024,
		AmaxComputeAlgo: "most_recent"}
	if r != want || DefaultFP8Recipe() != want {
		t.Errorf("fp8 defaults = %+v, want %+v", r, want)
	}

	o, err := NewDistributedDataParallelKwargs().PowerSGDOptions()
	if err != nil {
		t.Fatal(err)
	}
	if o != (PowerSGDOptions{MatrixApproximationRank: 1, StartPowerSGDIter: 1000, MinCompressionRate: 2,
		UseErrorFeedback: true, WarmStart: true, CompressionStatsLoggingFrequency: 10000}) {
		t.Errorf("PowerSGD defaults = %+v", o)
	}
}

func TestToKwargsOnlyNonDefaults(t *testing.T) {
	empties := []Handler{NewAutocastKwargs(), AutocastKwargs{}, NewDistributedDataParallelKwargs(), DistributedDataParallelKwargs{},
		NewGradScalerKwargs(), GradScalerKwargs{}, NewInitProcessGroupKwargs(), NewProfileKwargs(), NewFP8RecipeKwargs(),
		GradScalerKwargs{InitScale: 65536, Enabled: Bool(true)}, FP8RecipeKwargs{FP8Format: "hybrid", Margin: Int(0)}}
	for _, h := range empties {
		if m := h.ToKwargs(); len(m) != 0 {
			t.Errorf("%s %+v: ToKwargs = %v, want empty", h.HandlerName(), h, m)
		}
	}

	cb := func(Trace) {}
	cases := []struct {
		h    Handler
		want map[string]any
	}{
		{AutocastKwargs{Enabled: Bool(false), CacheEnabled: Bool(true)}, map[string]any{"enabled": false, "cache_enabled": true}},
		{DistributedDataParallelKwargs{FindUnusedParameters: true, BucketCapMB: 50, BroadcastBuffers: Bool(false),
			CommHook: CommHookFP16, StaticGraph: true},
			map[string]any{"find_unused_parameters": true, "bucket_cap_mb": 50.0, "broadcast_buffers": false, "static_graph": true}},
		{GradScalerKwargs{InitScale: 1024, BackoffFactor: 0.25, GrowthInterval: 10, Enabled: Bool(false)},
			map[string]any{"init_scale": 1024.0, "backoff_factor": 0.25, "growth_interval": 10, "enabled": false}},
		{InitProcessGroupKwargs{Backend: "GLOO", Timeout: 800 * time.Second},
			map[string]any{"backend": "gloo", "timeout": 800 * time.Second}},
		{ProfileKwargs{Activities: []string{"cpu"}, ScheduleOption: &Schedule{Wait: 1, Warmup: 1, Active: 2, Repeat: 2},
			WithStack: true, OutputTraceDir: "out"},
			map[string]any{"activities": []string{"cpu"}, "schedule_option": map[string]int{"wait": 1, "warmup": 1, "active": 2, "repeat": 2},
				"with_stack": true, "output_trace_dir": "out"}},
		{FP8RecipeKwargs{Backend: "msamp", OptLevel: "O1", Margin: Int(2), FP8Format: "e4m3", OverrideLinearPrecision: &[3]bool{true, false, false}},
			map[string]any{"backend": "MSAMP", "opt_level": "O1", "margin": 2, "fp8_format": "E4M3",
				"override_linear_precision": [3]bool{true, false, false}}},
	}
	for _, c := range cases {
		if got := c.h.ToKwargs(); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: ToKwargs = %#v\nwant %#v", c.h.HandlerName(), got, c.want)
		}
	}
	// A func cannot be compared with DeepEqual: check on_trace_ready separately.
	if m := (ProfileKwargs{OnTraceReady: cb}).ToKwargs(); len(m) != 1 || m["on_trace_ready"] == nil {
		t.Errorf("on_trace_ready: %v", m)
	}
	// DDP's comm fields are reported by CommKwargs, not ToKwargs (Accelerate's to_dict drops them).
	d := DistributedDataParallelKwargs{CommHook: "POWER_SGD", CommWrapper: "bf16", CommStateOption: map[string]any{"matrix_approximation_rank": 2}}
	if m := d.ToKwargs(); len(m) != 0 {
		t.Errorf("DDP ToKwargs includes comm fields: %v", m)
	}
	if m := d.CommKwargs(); !reflect.DeepEqual(m, map[string]any{"comm_hook": "power_sgd", "comm_wrapper": "bf16",
		"comm_state_option": map[string]any{"matrix_approximation_rank": 2}}) {
		t.Errorf("CommKwargs = %v", m)
	}
}

func TestValidationMessages(t *testing.T) {
	cases := []struct {
		h    Handler
		want string // the whole message
	}{
		{FP8RecipeKwargs{FP8Format: "E3M4"}, "`fp8_format` must be one of HYBRID or E4M3 or E5M2."},
		{FP8RecipeKwargs{AmaxComputeAlgo: "mean"}, "`amax_compute_algo` must be one of max or most_recent"},
		{FP8RecipeKwargs{Backend: "ao"}, "`backend` must be 'MSAMP' or 'TE' (TransformerEngine) to use `FP8RecipeKwargs`."},
		{FP8RecipeKwargs{OptLevel: "O3"}, "`opt_level` must be one of O1 or O2"},
		{ProfileKwargs{Activities: []string{"cpu", "tpu"}}, "Invalid profiler activity: tpu. Must be one of ['cpu', 'cuda']."},
		{DistributedDataParallelKwargs{CommHook: "int8"}, `"int8" is not a valid DDPCommunicationHookType: comm_hook must be one of no, fp16, bf16, power_sgd, batched_power_sgd`},
		{DistributedDataParallelKwargs{CommWrapper: "power_sgd"}, `"power_sgd" is not a valid comm_wrapper: comm_wrapper must be one of no, fp16, bf16`},
		{DistributedDataParallelKwargs{CommHook: "power_sgd", CommStateOption: map[string]any{"start_powerSGD_iter": 1}},
			"Expect `start_powerSGD_iter` > 1 if `use_error_feedback` or `warm_start` is enabled, because PowerSGD can only be applied after the first two iterations in DDP."},
		{DistributedDataParallelKwargs{CommHook: "power_sgd", CommStateOption: map[string]any{"rank": 1}},
			"comm_state_option: PowerSGDState got an unexpected keyword argument 'rank'"},
		{GradScalerKwargs{GrowthFactor: 0.9}, "The growth factor must be > 1.0."},
		{GradScalerKwargs{BackoffFactor: 1.5}, "The backoff factor must be < 1.0."},
		{InitProcessGroupKwargs{Backend: "mpi"}, `backend "mpi" is not available in goaccel: use "gloo" (CPU) or "nccl" (GPU)`},
		{InitProcessGroupKwargs{InitMethod: "file:///tmp/x"}, `init_method "file:///tmp/x" is not supported: goaccel's rendezvous is a TCP store; use "env://" (MASTER_ADDR/MASTER_PORT) or "tcp://host:port"`},
		{ProfileKwargs{ScheduleOption: &Schedule{Wait: 1, Active: 0}}, "Invalid profiler schedule arguments: wait=1 warmup=0 active=0 repeat=0 skip_first=0 (need active > 0 and the others >= 0)"},
	}
	for _, c := range cases {
		err := c.h.Validate()
		if err == nil || err.Error() != c.want {
			t.Errorf("%s %+v: Validate = %v\nwant %s", c.h.HandlerName(), c.h, err, c.want)
		}
	}
	// Case-insensitive names are accepted and normalised.
	for _, h := range []Handler{FP8RecipeKwargs{Backend: "te", FP8Format: "e5m2", AmaxComputeAlgo: "MAX"},
		FP8RecipeKwargs{Backend: "MSAMP", OptLevel: "o1"}, DistributedDataParallelKwargs{CommHook: "BF16", CommWrapper: "FP16"},
		DistributedDataParallelKwargs{CommHook: "power_sgd", CommStateOption: map[string]any{"matrix_approximation_rank": 4.0, "start_powerSGD_iter": 2}},
		InitProcessGroupKwargs{Backend: "NCCL", InitMethod: "tcp://10.0.0.1:29500"}, InitProcessGroupKwargs{InitMethod: "env://"},
		ProfileKwargs{Activities: []string{"cuda", "cpu"}}} {
		if err := h.Validate(); err != nil {
			t.Errorf("%+v: unexpected %v", h, err)
		}
	}
	if err := (InitProcessGroupKwargs{Backend: "nccl"}).CheckBackend(false); err == nil ||
		err.Error() != "Your assigned backend nccl is not available, please use gloo" {
		t.Errorf("CheckBackend = %v", err)
	}
	if err := (InitProcessGroupKwargs{}).CheckBackend(false); err != nil {
		t.Error(err)
	}
}

func TestValidateHandlers(t *testing.T) {
	gs := GradScalerKwargs{InitScale: 1024}
	s, err := ValidateHandlersEnv([]any{gs, &DistributedDataParallelKwargs{FindUnusedParameters: true}}, "fp16", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.GradScaler().Resolved().InitScale != 1024 || !s.DDP().FindUnusedParameters || !s.Has("GradScalerKwargs") || s.Has("ProfileKwargs") {
		t.Errorf("set access wrong: %+v", s)
	}
	if !s.Autocast().IsEnabled() || s.InitProcessGroup().EffectiveTimeout("gloo") != DefaultTimeout || s.Profile().OutputTraceDir != "" {
		t.Error("absent handlers should read as defaults")
	}
	if _, _, ok := s.FP8Recipe(); ok {
		t.Error("no FP8 recipe passed")
	}
	if len(s.Handlers()) != 2 || s.MixedPrecision() != "fp16" {
		t.Errorf("handlers %v, mp %q", s.Handlers(), s.MixedPrecision())
	}

	// Duplicates, value and pointer forms alike.
	for _, list := range [][]any{
		{GradScalerKwargs{}, GradScalerKwargs{InitScale: 2}},
		{&GradScalerKwargs{}, GradScalerKwargs{}},
	} {
		_, err := ValidateHandlersEnv(list, "no", nil)
		if err == nil || err.Error() != "You can only pass one `GradScalerKwargs` in `kwargs_handlers`." {
			t.Errorf("duplicate: %v", err)
		}
	}
	_, err = ValidateHandlersEnv([]any{ProfileKwargs{}, AutocastKwargs{}, &ProfileKwargs{}}, "no", nil)
	if err == nil || err.Error() != "You can only pass one `ProfileKwargs` in `kwargs_handlers`." {
		t.Errorf("duplicate profile: %v", err)
	}

	// FP8 without mixed_precision="fp8".
	for _, mp := range []string{"", "no", "bf16", "fp16"} {
		_, err := ValidateHandlersEnv([]any{FP8RecipeKwargs{}}, mp, nil)
		if err == nil || err.Error() != "Passing in an FP8 configuration requires setting `mixed_precision='fp8'`." {
			t.Errorf("fp8 with %q: %v", mp, err)
		}
	}
	s, err = ValidateHandlersEnv([]any{&FP8RecipeKwargs{FP8Format: "e4m3"}}, "FP8", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, r, ok := s.FP8Recipe(); !ok || r.FP8Format != "E4M3" {
		t.Errorf("fp8 recipe %+v %v", r, ok)
	}
	notes := strings.Join(s.Notes(), "\n")
	if !strings.Contains(notes, "FP8RecipeKwargs accepted (backend TE, format E4M3") || !strings.Contains(notes, "goaccel has no FP8 engine") {
		t.Errorf("notes: %s", notes)
	}

	// Not a handler.
	type myHandler struct{ AutocastKwargs }
	for _, v := range []any{42, "GradScalerKwargs", map[string]any{}, myHandler{}, nil, (*GradScalerKwargs)(nil)} {
		_, err := ValidateHandlersEnv([]any{v}, "no", nil)
		if err == nil || !strings.HasPrefix(err.Error(), "Unsupported kwargs handler passed: ") || !errors.Is(err, ErrUnsupportedHandler) {
			t.Errorf("%T: %v", v, err)
		}
	}
	_, err = ValidateHandlersEnv([]any{42}, "no", nil)
	if !strings.HasPrefix(err.Error(), "Unsupported kwargs handler passed: int (42), must be one of kwargs.AutocastKwargs") {
		t.Errorf("message: %v", err)
	}

	// Invalid handler: wrapped with its position and name.
	_, err = ValidateHandlersEnv([]any{AutocastKwargs{}, GradScalerKwargs{GrowthFactor: 0.5}}, "fp16", nil)
	if err == nil || err.Error() != "kwargs_handlers[1] (GradScalerKwargs): The growth factor must be > 1.0." {
		t.Errorf("invalid handler: %v", err)
	}
	// Env fallbacks are validated too.
	_, err = ValidateHandlersEnv([]any{FP8RecipeKwargs{}}, "fp8", map[string]string{"ACCELERATE_FP8_FORMAT": "bogus"})
	if err == nil || !strings.Contains(err.Error(), "`fp8_format` must be one of HYBRID or E4M3 or E5M2.") {
		t.Errorf("env fallback: %v", err)
	}
	// Notes warn about a grad scaler that will not be used.
	s, _ = ValidateHandlersEnv([]any{GradScalerKwargs{}}, "bf16", nil)
	if n := s.Notes(); len(n) != 1 || !strings.Contains(n[0], "only used with fp16") {
		t.Errorf("notes %v", n)
	}
}

func TestFP8EnvFallbacks(t *testing.T) {
	env := map[string]string{
		"ACCELERATE_FP8_BACKEND": "msamp", "ACCELERATE_FP8_FORMAT": "e5m2", "ACCELERATE_FP8_MARGIN": "3",
		"ACCELERATE_FP8_INTERVAL": "7", "ACCELERATE_FP8_AMAX_HISTORY_LEN": "16", "ACCELERATE_FP8_AMAX_COMPUTE_ALGO": "MAX",
		"ACCELERATE_FP8_OVERRIDE_DGRAD": "yes", "ACCELERATE_FP8_USE_AUTOCAST_DURING_EVAL": "1", "ACCELERATE_FP8_OPT_LEVEL": "O1",
	}
	r, err := FP8RecipeKwargs{Margin: Int(0)}.Resolve(env)
	if err != nil {
		t.Fatal(err)
	}
	want := FP8Recipe{Backend: "MSAMP", UseAutocastDuringEval: true, OptLevel: "O1", Margin: 0, Interval: 7, FP8Format: "E5M2",
		AmaxHistoryLen: 16, AmaxComputeAlgo: "max", OverrideLinearPrecision: [3]bool{false, true, false}}
	if r != want {
		t.Errorf("resolved %+v\nwant %+v", r, want)
	}
	// ToKwargs ignores the environment (defaults of a cleared environment);
	// ToKwargsEnv reports what a handler built in env differs by.
	if m := (FP8RecipeKwargs{}).ToKwargs(); len(m) != 0 {
		t.Errorf("ToKwargs = %v", m)
	}
	if m := (FP8RecipeKwargs{}).ToKwargsEnv(map[string]string{"ACCELERATE_FP8_INTERVAL": "7"}); !reflect.DeepEqual(m, map[string]any{"interval": 7}) {
		t.Errorf("ToKwargsEnv = %v", m)
	}
	_, err = FP8RecipeKwargs{}.Resolve(map[string]string{"ACCELERATE_FP8_MARGIN": "x"})
	if err == nil || err.Error() != "ACCELERATE_FP8_MARGIN: invalid literal for int() with base 10: 'x'" {
		t.Errorf("bad int: %v", err)
	}
	_, err = FP8RecipeKwargs{}.Resolve(map[string]string{"ACCELERATE_FP8_OVERRIDE_WGRAD": "maybe"})
	if err == nil || err.Error() != "ACCELERATE_FP8_OVERRIDE_WGRAD: invalid truth value maybe" {
		t.Errorf("bad flag: %v", err)
	}
	if got := EnvMap([]string{"A=1", "B=x=y", "A=2", "junk"}); !reflect.DeepEqual(got, map[string]string{"A": "2", "B": "x=y"}) {
		t.Errorf("EnvMap = %v", got)
	}
}

// Resolving concurrently with different environments must not interfere
// (Accelerate's clear_environment would); run with -race.
func TestFP8ResolveConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			env := map[string]string{"ACCELERATE_FP8_INTERVAL": fmt.Sprint(g + 1), "ACCELERATE_FP8_MARGIN": fmt.Sprint(g)}
			k := FP8RecipeKwargs{}
			for i := 0; i < 200; i++ {
				r, err := k.Resolve(env)
				if err != nil || r.Interval != g+1 || r.Margin != g {
					errs <- fmt.Errorf("goroutine %d: %+v %v", g, r, err)
					return
				}
				m := k.ToKwargsEnv(env)
				if g > 0 && m["margin"] != g {
					errs <- fmt.Errorf("goroutine %d: ToKwargsEnv %v", g, m)
					return
				}
				if len(k.ToKwargs()) != 0 {
					errs <- fmt.Errorf("goroutine %d: ToKwargs not empty", g)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
