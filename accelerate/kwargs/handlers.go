package kwargs

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"time"
)

// Bool returns a pointer to b, for the handlers' *bool fields.
func Bool(b bool) *bool { return &b }

// Int returns a pointer to i, for the FP8 recipe's *int fields.
func Int(i int) *int { return &i }

// Handler is implemented by every kwargs handler of this package.
// [ValidateHandlers] accepts only this package's six handler types (as values
// or pointers), not any type that happens to implement Handler, mirroring
// Accelerate's exact-class lookup.
type Handler interface {
	// HandlerName is Accelerate's class name, e.g. "GradScalerKwargs".
	HandlerName() string
	// ToKwargs returns the fields whose values differ from the defaults,
	// keyed by Accelerate's (snake_case) field names.
	ToKwargs() map[string]any
	// Validate reports an invalid field value.
	Validate() error
}

func boolOr(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}

// ---------------------------------------------------------------------------
// AutocastKwargs

// AutocastKwargs mirrors Accelerate's AutocastKwargs (torch.autocast's
// arguments).
//
// goaccel has no operator-level autocast: Go code runs its arithmetic in the
// precision it is written in. Enabled tells the training code (through the
// Accelerator) whether the mixed-precision region is on, so that code that
// simulates reduced precision (amp.RoundBF16Slice and friends) can honour it;
// CacheEnabled is accepted and reported but has no effect (there is no cast
// cache).
type AutocastKwargs struct {
	// Enabled is Accelerate's enabled (default True; nil means True).
	Enabled *bool
	// CacheEnabled is Accelerate's cache_enabled (default None; nil means
	// None, i.e. torch's own default).
	CacheEnabled *bool
}

// NewAutocastKwargs returns AutocastKwargs with Accelerate's defaults
// (enabled=True, cache_enabled=None).
func NewAutocastKwargs() AutocastKwargs { return AutocastKwargs{Enabled: Bool(true)} }

// HandlerName implements [Handler].
func (AutocastKwargs) HandlerName() string { return "AutocastKwargs" }

// IsEnabled is the effective enabled value.
func (k AutocastKwargs) IsEnabled() bool { return boolOr(k.Enabled, true) }

// ToKwargs implements [Handler]: keys "enabled", "cache_enabled".
func (k AutocastKwargs) ToKwargs() map[string]any {
	m := map[string]any{}
	if !k.IsEnabled() {
		m["enabled"] = false
	}
	if k.CacheEnabled != nil {
		m["cache_enabled"] = *k.CacheEnabled
	}
	return m
}

// Validate implements [Handler]; every AutocastKwargs value is valid.
func (k AutocastKwargs) Validate() error { return nil }

// Describe is a one-line report of what the handler does in goaccel.
func (k AutocastKwargs) Describe() string {
	cache := "None"
	if k.CacheEnabled != nil {
		cache = fmt.Sprint(*k.CacheEnabled)
	}
	return fmt.Sprintf("AutocastKwargs(enabled=%v, cache_enabled=%s): goaccel has no operator-level autocast; "+
		"the flag is reported to the training code, cache_enabled has no effect", k.IsEnabled(), cache)
}

// ---------------------------------------------------------------------------
// DistributedDataParallelKwargs

// CommHookType names a DDP communication hook, Accelerate's
// DDPCommunicationHookType values.
type CommHookType string

// Communication hooks (comm_hook) and wrappers (comm_wrapper: no, fp16, bf16).
const (
	CommHookNo              CommHookType = "no"
	CommHookFP16            CommHookType = "fp16"
	CommHookBF16            CommHookType = "bf16"
	CommHookPowerSGD        CommHookType = "power_sgd"
	CommHookBatchedPowerSGD CommHookType = "batched_power_sgd"
)

var commHooks = []CommHookType{CommHookNo, CommHookFP16, CommHookBF16, CommHookPowerSGD, CommHookBatchedPowerSGD}

// DefaultBucketCapMB is the default bucket_cap_mb.
const DefaultBucketCapMB = 25

// DistributedDataParallelKwargs mirrors Accelerate's
// DistributedDataParallelKwargs; package accelerate/ddp implements the
// wrapper it configures.
type DistributedDataParallelKwargs struct {
	// Dim is dim (default 0): the batch dimension DataParallel scatters
	// along. Accepted and reported; goaccel's data loader shards batches
	// itself, so it has no effect on the wrapper.
	Dim int
	// BroadcastBuffers is broadcast_buffers (default True; nil means True):
	// re-broadcast rank 0's buffers (non-trainable state) before each
	// forward via ddp.(*DDP).SyncBuffers. Parameters are always broadcast
	// from rank 0 when the model is wrapped, as torch's DDP does.
	BroadcastBuffers *bool
	// BucketCapMB is bucket_cap_mb (default 25; 0 means 25): the size cap,
	// in MiB (1 MiB = 1024*1024 bytes, as torch), of the gradient buckets,
	// one all-reduce per bucket. Accelerate types it int; fractions are
	// allowed here (torch accepts them too).
	BucketCapMB float64
	// FindUnusedParameters is find_unused_parameters (default False).
	// goaccel all-reduces every gradient buffer every step, so a parameter
	// that took no part in the forward pass (zero gradient) never stalls a
	// reduction; accepted and reported, no effect.
	FindUnusedParameters bool
	// CheckReduction is check_reduction (default False; deprecated in
	// torch). Accepted, no effect.
	CheckReduction bool
	// GradientAsBucketView is gradient_as_bucket_view (default False).
	// goaccel's buckets are preallocated once and reused, gradients are
	// copied in and out; the flag is accepted and reported, no effect.
	GradientAsBucketView bool
	// StaticGraph is static_graph (default False). The bucket layout is
	// fixed when the model is wrapped in any case; with StaticGraph a change
	// in the gradient layout is reported as an error naming static_graph.
	StaticGraph bool
	// CommHook is comm_hook (default "no"; "" means "no"): "fp16"/"bf16"
	// compress gradients to 16 bits on the wire, "power_sgd" /
	// "batched_power_sgd" use PowerSGD low-rank compression.
	CommHook CommHookType
	// CommWrapper is comm_wrapper (default "no"): "fp16"/"bf16" make the
	// PowerSGD hooks exchange their low-rank factors in 16 bits. Ignored
	// when CommHook is "no", as in Accelerate.
	CommWrapper CommHookType
	// CommStateOption is comm_state_option (default {}): the keyword
	// arguments of torch's PowerSGDState, used by the PowerSGD hooks; see
	// [PowerSGDOptions].
	CommStateOption map[string]any
}

// NewDistributedDataParallelKwargs returns DistributedDataParallelKwargs with
// Accelerate's defaults.
func NewDistributedDataParallelKwargs() DistributedDataParallelKwargs {
	return DistributedDataParallelKwargs{
		BroadcastBuffers: Bool(true),
		BucketCapMB:      DefaultBucketCapMB,
		CommHook:         CommHookNo,
		CommWrapper:      CommHookNo,
		CommStateOption:  map[string]any{},
	}
}

// HandlerName implements [Handler].
func (DistributedDataParallelKwargs) HandlerName() string { return "DistributedDataParallelKwargs" }

// BroadcastBuffersEnabled is the effective broadcast_buffers.
func (k DistributedDataParallelKwargs) BroadcastBuffersEnabled() bool {
	return boolOr(k.BroadcastBuffers, true)
}

// EffectiveBucketCapMB is the effective bucket_cap_mb.
func (k DistributedDataParallelKwargs) EffectiveBucketCapMB() float64 {
	if k.BucketCapMB == 0 {
		return DefaultBucketCapMB
	}
	return k.BucketCapMB
}

// BucketCapBytes is the bucket cap in bytes (bucket_cap_mb * 1024 * 1024).
func (k DistributedDataParallelKwargs) BucketCapBytes() int {
	return int(k.EffectiveBucketCapMB() * 1024 * 1024)
}

func normHook(h CommHookType) CommHookType {
	s := CommHookType(strings.ToLower(strings.TrimSpace(string(h))))
	if s == "" {
		return CommHookNo
	}
	return s
}

// EffectiveCommHook is the normalised comm_hook ("" → "no", lower case).
func (k DistributedDataParallelKwargs) EffectiveCommHook() CommHookType { return normHook(k.CommHook) }

// EffectiveCommWrapper is the normalised comm_wrapper; "no" when CommHook is
// "no" (Accelerate registers no hook then, so the wrapper is unused).
func (k DistributedDataParallelKwargs) EffectiveCommWrapper() CommHookType {
	if k.EffectiveCommHook() == CommHookNo {
		return CommHookNo
	}
	return normHook(k.CommWrapper)
}

// ToKwargs implements [Handler]. Like Accelerate's, it leaves out comm_hook,
// comm_wrapper and comm_state_option (they are not arguments of the DDP
// constructor; Accelerate's to_dict drops them): keys are "dim",
// "broadcast_buffers", "bucket_cap_mb", "find_unused_parameters",
// "check_reduction", "gradient_as_bucket_view", "static_graph".
func (k DistributedDataParallelKwargs) ToKwargs() map[string]any {
	m := map[string]any{}
	if k.Dim != 0 {
		m["dim"] = k.Dim
	}
	if !k.BroadcastBuffersEnabled() {
		m["broadcast_buffers"] = false
	}
	if c := k.EffectiveBucketCapMB(); c != DefaultBucketCapMB {
		m["bucket_cap_mb"] = c
	}
	if k.FindUnusedParameters {
		m["find_unused_parameters"] = true
	}
	if k.CheckReduction {
		m["check_reduction"] = true
	}
	if k.GradientAsBucketView {
		m["gradient_as_bucket_view"] = true
	}
	if k.StaticGraph {
		m["static_graph"] = true
	}
	return m
}

// CommKwargs returns the non-default comm_hook, comm_wrapper and
// comm_state_option (the fields ToKwargs leaves out), for reports.
func (k DistributedDataParallelKwargs) CommKwargs() map[string]any {
	m := map[string]any{}
	if h := k.EffectiveCommHook(); h != CommHookNo {
		m["comm_hook"] = string(h)
	}
	if w := normHook(k.CommWrapper); w != CommHookNo {
		m["comm_wrapper"] = string(w)
	}
	if len(k.CommStateOption) > 0 {
		c := make(map[string]any, len(k.CommStateOption))
		for key, v := range k.CommStateOption {
			c[key] = v
		}
		m["comm_state_option"] = c
	}
	return m
}

// Validate implements [Handler].
func (k DistributedDataParallelKwargs) Validate() error {
	h := k.EffectiveCommHook()
	valid := false
	for _, c := range commHooks {
		if h == c {
			valid = true
		}
	}
	if !valid {
		return fmt.Errorf("%q is not a valid DDPCommunicationHookType: comm_hook must be one of no, fp16, bf16, power_sgd, batched_power_sgd", string(k.CommHook))
	}
	switch normHook(k.CommWrapper) {
	case CommHookNo, CommHookFP16, CommHookBF16:
	default:
		return fmt.Errorf("%q is not a valid comm_wrapper: comm_wrapper must be one of no, fp16, bf16", string(k.CommWrapper))
	}
	if c := k.BucketCapMB; c < 0 || math.IsNaN(c) || math.IsInf(c, 0) {
		return fmt.Errorf("bucket_cap_mb must be a positive number of MiB, got %v", c)
	}
	if k.Dim < 0 {
		return fmt.Errorf("dim must be >= 0, got %d", k.Dim)
	}
	if h == CommHookPowerSGD || h == CommHookBatchedPowerSGD {
		if _, err := k.PowerSGDOptions(); err != nil {
			return err
		}
	}
	return nil
}

// Describe is a one-line report of the wrapper's configuration.
func (k DistributedDataParallelKwargs) Describe() string {
	s := fmt.Sprintf("DistributedDataParallelKwargs(bucket_cap_mb=%v, broadcast_buffers=%v, comm_hook=%s",
		k.EffectiveBucketCapMB(), k.BroadcastBuffersEnabled(), k.EffectiveCommHook())
	if w := k.EffectiveCommWrapper(); w != CommHookNo {
		s += ", comm_wrapper=" + string(w)
	}
	if k.FindUnusedParameters || k.StaticGraph || k.GradientAsBucketView || k.CheckReduction {
		s += "; find_unused_parameters/static_graph/gradient_as_bucket_view/check_reduction accepted, see HANDLERS.md"
	}
	return s + ")"
}

// PowerSGDOptions are the arguments of torch's PowerSGDState, read from
// comm_state_option; the defaults are torch's.
type PowerSGDOptions struct {
	MatrixApproximationRank          int     // matrix_approximation_rank, default 1
	StartPowerSGDIter                int     // start_powerSGD_iter, default 1000
	MinCompressionRate               float64 // min_compression_rate, default 2
	UseErrorFeedback                 bool    // use_error_feedback, default True
	WarmStart                        bool    // warm_start, default True
	OrthogonalizationEpsilon         float64 // orthogonalization_epsilon, default 0
	RandomSeed                       int64   // random_seed, default 0
	CompressionStatsLoggingFrequency int     // compression_stats_logging_frequency, default 10000 (accepted, unused)
	BatchTensorsWithSameShape        bool    // batch_tensors_with_same_shape, default False (accepted, unused)
}

// DefaultPowerSGDOptions returns torch's PowerSGDState defaults.
func DefaultPowerSGDOptions() PowerSGDOptions {
	return PowerSGDOptions{
		MatrixApproximationRank:          1,
		StartPowerSGDIter:                1000,
		MinCompressionRate:               2,
		UseErrorFeedback:                 true,
		WarmStart:                        true,
		CompressionStatsLoggingFrequency: 10000,
	}
}

// PowerSGDOptions parses CommStateOption into torch's PowerSGDState
// arguments (unknown keys and mistyped values are errors, as torch's
// constructor would raise).
func (k DistributedDataParallelKwargs) PowerSGDOptions() (PowerSGDOptions, error) {
	o := DefaultPowerSGDOptions()
	for key, v := range k.CommStateOption {
		var err error
		switch key {
		case "matrix_approximation_rank":
			o.MatrixApproximationRank, err = toInt(v)
		case "start_powerSGD_iter":
			o.StartPowerSGDIter, err = toInt(v)
		case "min_compression_rate":
			o.MinCompressionRate, err = toFloat(v)
		case "use_error_feedback":
			o.UseErrorFeedback, err = toBool(v)
		case "warm_start":
			o.WarmStart, err = toBool(v)
		case "orthogonalization_epsilon":
			o.OrthogonalizationEpsilon, err = toFloat(v)
		case "random_seed":
			var i int
			i, err = toInt(v)
			o.RandomSeed = int64(i)
		case "compression_stats_logging_frequency":
			o.CompressionStatsLoggingFrequency, err = toInt(v)
		case "batch_tensors_with_same_shape":
			o.BatchTensorsWithSameShape, err = toBool(v)
		case "process_group":
			err = errors.New("the process group is goaccel's; it cannot be passed in comm_state_option")
		default:
			return o, fmt.Errorf("comm_state_option: PowerSGDState got an unexpected keyword argument '%s'", key)
		}
		if err != nil {
			return o, fmt.Errorf("comm_state_option[%q]: %w", key, err)
		}
	}
	if o.MatrixApproximationRank < 1 {
		return o, fmt.Errorf("comm_state_option: matrix_approximation_rank must be >= 1, got %d", o.MatrixApproximationRank)
	}
	if (o.UseErrorFeedback || o.WarmStart) && o.StartPowerSGDIter <= 1 {
		return o, errors.New("Expect `start_powerSGD_iter` > 1 if `use_error_feedback` or `warm_start` is enabled, " +
			"because PowerSGD can only be applied after the first two iterations in DDP.")
	}
	return o, nil
}

func toInt(v any) (int, error) {
	switch x := v.(type) {
	case int:
		return x, nil
	case int32:
		return int(x), nil
	case int64:
		return int(x), nil
	case uint:
		return int(x), nil
	case float64:
		if x == math.Trunc(x) && !math.IsInf(x, 0) {
			return int(x), nil
		}
	case float32:
		if f := float64(x); f == math.Trunc(f) && !math.IsInf(f, 0) {
			return int(f), nil
		}
	}
	return 0, fmt.Errorf("want an integer, got %T %v", v, v)
}

func toFloat(v any) (float64, error) {
	switch x := v.(type) {
	case float64:
		return x, nil
	case float32:
		return float64(x), nil
	case int:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case int32:
		return float64(x), nil
	}
	return 0, fmt.Errorf("want a number, got %T %v", v, v)
}

func toBool(v any) (bool, error) {
	if b, ok := v.(bool); ok {
		return b, nil
	}
	return false, fmt.Errorf("want a bool, got %T %v", v, v)
}

// ---------------------------------------------------------------------------
// GradScalerKwargs

// GradScalerKwargs defaults (torch.amp.GradScaler's).
const (
	DefaultInitScale      = 65536.0
	DefaultGrowthFactor   = 2.0
	DefaultBackoffFactor  = 0.5
	DefaultGrowthInterval = 2000
)

// GradScalerKwargs mirrors Accelerate's GradScalerKwargs: the dynamic loss
// scaler of fp16 mixed precision, implemented by package accelerate/amp.
type GradScalerKwargs struct {
	// InitScale is init_scale (default 65536.0; 0 means default).
	InitScale float64
	// GrowthFactor is growth_factor (default 2.0; 0 means default).
	GrowthFactor float64
	// BackoffFactor is backoff_factor (default 0.5; 0 means default).
	BackoffFactor float64
	// GrowthInterval is growth_interval (default 2000; 0 means default).
	GrowthInterval int
	// Enabled is enabled (default True; nil means True).
	Enabled *bool
}

// NewGradScalerKwargs returns GradScalerKwargs with Accelerate's defaults.
func NewGradScalerKwargs() GradScalerKwargs {
	return GradScalerKwargs{
		InitScale:      DefaultInitScale,
		GrowthFactor:   DefaultGrowthFactor,
		BackoffFactor:  DefaultBackoffFactor,
		GrowthInterval: DefaultGrowthInterval,
		Enabled:        Bool(true),
	}
}

// HandlerName implements [Handler].
func (GradScalerKwargs) HandlerName() string { return "GradScalerKwargs" }

// Resolved returns k with every default spelled out (Enabled non-nil).
func (k GradScalerKwargs) Resolved() GradScalerKwargs {
	if k.InitScale == 0 {
		k.InitScale = DefaultInitScale
	}
	if k.GrowthFactor == 0 {
		k.GrowthFactor = DefaultGrowthFactor
	}
	if k.BackoffFactor == 0 {
		k.BackoffFactor = DefaultBackoffFactor
	}
	if k.GrowthInterval == 0 {
		k.GrowthInterval = DefaultGrowthInterval
	}
	k.Enabled = Bool(boolOr(k.Enabled, true))
	return k
}

// ToKwargs implements [Handler]: keys "init_scale", "growth_factor",
// "backoff_factor", "growth_interval", "enabled".
func (k GradScalerKwargs) ToKwargs() map[string]any {
	r := k.Resolved()
	m := map[string]any{}
	if r.InitScale != DefaultInitScale {
		m["init_scale"] = r.InitScale
	}
	if r.GrowthFactor != DefaultGrowthFactor {
		m["growth_factor"] = r.GrowthFactor
	}
	if r.BackoffFactor != DefaultBackoffFactor {
		m["backoff_factor"] = r.BackoffFactor
	}
	if r.GrowthInterval != DefaultGrowthInterval {
		m["growth_interval"] = r.GrowthInterval
	}
	if !*r.Enabled {
		m["enabled"] = false
	}
	return m
}

// Validate implements [Handler], with torch.amp.GradScaler's messages.
func (k GradScalerKwargs) Validate() error {
	r := k.Resolved()
	bad := func(f float64) bool { return math.IsNaN(f) || math.IsInf(f, 0) }
	if r.InitScale < 0 || bad(r.InitScale) {
		return fmt.Errorf("init_scale must be a positive finite number, got %v", r.InitScale)
	}
	if !(r.GrowthFactor > 1.0) || bad(r.GrowthFactor) {
		return errors.New("The growth factor must be > 1.0.")
	}
	if !(r.BackoffFactor < 1.0) {
		return errors.New("The backoff factor must be < 1.0.")
	}
	if r.BackoffFactor < 0 || bad(r.BackoffFactor) {
		return fmt.Errorf("backoff_factor must be in (0, 1), got %v", r.BackoffFactor)
	}
	if r.GrowthInterval < 0 {
		return fmt.Errorf("growth_interval must be a positive number of steps, got %d", r.GrowthInterval)
	}
	return nil
}

// ---------------------------------------------------------------------------
// InitProcessGroupKwargs

// Process-group timeouts: Accelerate's defaults since v0.31 (#2758).
const (
	DefaultTimeout     = 1800 * time.Second // gloo (and every backend but nccl)
	DefaultNCCLTimeout = 600 * time.Second  // nccl
)

// Backends.
const (
	BackendGloo = "gloo" // the CPU path (goaccel's TCP process group)
	BackendNCCL = "nccl" // names the GPU path
)

// InitProcessGroupKwargs mirrors Accelerate's InitProcessGroupKwargs.
type InitProcessGroupKwargs struct {
	// Backend is backend. Accelerate's default is "nccl"; goaccel's default
	// ("" here) is "nccl" when a GPU is in use, else "gloo" (see
	// EffectiveBackend), which is what Accelerate ends up choosing anyway.
	Backend string
	// InitMethod is init_method (default None, i.e. "env://": rendezvous at
	// MASTER_ADDR:MASTER_PORT). "tcp://host:port" names the rendezvous
	// endpoint explicitly.
	InitMethod string
	// Timeout is timeout (default None → 600 s for nccl, 1800 s otherwise;
	// 0 here means that default, see EffectiveTimeout). It bounds the
	// rendezvous and every collective.
	Timeout time.Duration
}

// NewInitProcessGroupKwargs returns InitProcessGroupKwargs with goaccel's
// defaults: every field unset (backend and timeout resolved at
// initialisation, see EffectiveBackend and EffectiveTimeout).
func NewInitProcessGroupKwargs() InitProcessGroupKwargs { return InitProcessGroupKwargs{} }

// HandlerName implements [Handler].
func (InitProcessGroupKwargs) HandlerName() string { return "InitProcessGroupKwargs" }

// EffectiveBackend is the backend to use: Backend if set (lower case), else
// "nccl" when onGPU, else "gloo".
func (k InitProcessGroupKwargs) EffectiveBackend(onGPU bool) string {
	if b := strings.ToLower(strings.TrimSpace(k.Backend)); b != "" {
		return b
	}
	if onGPU {
		return BackendNCCL
	}
	return BackendGloo
}

// EffectiveTimeout is Timeout if set, else 600 s for "nccl" and 1800 s for
// any other backend (Accelerate's InitProcessGroupKwargs.__post_init__).
func (k InitProcessGroupKwargs) EffectiveTimeout(backend string) time.Duration {
	if k.Timeout > 0 {
		return k.Timeout
	}
	if strings.EqualFold(backend, BackendNCCL) {
		return DefaultNCCLTimeout
	}
	return DefaultTimeout
}

// CheckBackend reports a backend that cannot run here with Accelerate's
// message: "nccl" without a GPU.
func (k InitProcessGroupKwargs) CheckBackend(onGPU bool) error {
	if b := k.EffectiveBackend(onGPU); b == BackendNCCL && !onGPU {
		return fmt.Errorf("Your assigned backend %s is not available, please use %s", k.Backend, BackendGloo)
	}
	return nil
}

// ToKwargs implements [Handler]: keys "backend", "init_method", "timeout"
// (a time.Duration), each present only when set.
func (k InitProcessGroupKwargs) ToKwargs() map[string]any {
	m := map[string]any{}
	if b := strings.ToLower(strings.TrimSpace(k.Backend)); b != "" {
		m["backend"] = b
	}
	if k.InitMethod != "" {
		m["init_method"] = k.InitMethod
	}
	if k.Timeout > 0 {
		m["timeout"] = k.Timeout
	}
	return m
}

// Validate implements [Handler].
func (k InitProcessGroupKwargs) Validate() error {
	switch strings.ToLower(strings.TrimSpace(k.Backend)) {
	case "", BackendGloo, BackendNCCL:
	default:
		return fmt.Errorf("backend %q is not available in goaccel: use %q (CPU) or %q (GPU)", k.Backend, BackendGloo, BackendNCCL)
	}
	if k.Timeout < 0 {
		return fmt.Errorf("timeout must be positive, got %v", k.Timeout)
	}
	if m := k.InitMethod; m != "" && m != "env://" {
		rest, ok := strings.CutPrefix(m, "tcp://")
		if !ok {
			return fmt.Errorf("init_method %q is not supported: goaccel's rendezvous is a TCP store; use \"env://\" (MASTER_ADDR/MASTER_PORT) or \"tcp://host:port\"", m)
		}
		if _, _, err := net.SplitHostPort(rest); err != nil {
			return fmt.Errorf("init_method %q: %w", m, err)
		}
	}
	return nil
}
