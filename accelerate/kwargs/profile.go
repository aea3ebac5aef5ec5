package kwargs

import (
	"errors"
	"fmt"
	"slices"
)

// Profiler activities.
const (
	ActivityCPU  = "cpu"
	ActivityCUDA = "cuda"
)

// Schedule mirrors torch.profiler.schedule's arguments (Accelerate's
// schedule_option dict, keys wait, warmup, active, repeat, skip_first, plus
// torch's skip_first_wait): skip the first SkipFirst steps, then cycle
// through Wait idle steps, Warmup steps (profiler on, results discarded) and
// Active recorded steps, Repeat times (0: until the profiler stops).
type Schedule struct {
	Wait          int // wait
	Warmup        int // warmup
	Active        int // active (must be > 0)
	Repeat        int // repeat, default 0
	SkipFirst     int // skip_first, default 0
	SkipFirstWait int // skip_first_wait, default 0 (torch >= 2.5)
}

// Validate applies torch.profiler.schedule's check.
func (s Schedule) Validate() error {
	if s.Wait < 0 || s.Warmup < 0 || s.Active <= 0 || s.Repeat < 0 || s.SkipFirst < 0 || s.SkipFirstWait < 0 {
		return fmt.Errorf("Invalid profiler schedule arguments: wait=%d warmup=%d active=%d repeat=%d skip_first=%d "+
			"(need active > 0 and the others >= 0)", s.Wait, s.Warmup, s.Active, s.Repeat, s.SkipFirst)
	}
	return nil
}

// ToMap returns the schedule as Accelerate's schedule_option dict (wait,
// warmup and active always; the others when non-zero).
func (s Schedule) ToMap() map[string]int {
	m := map[string]int{"wait": s.Wait, "warmup": s.Warmup, "active": s.Active}
	if s.Repeat != 0 {
		m["repeat"] = s.Repeat
	}
	if s.SkipFirst != 0 {
		m["skip_first"] = s.SkipFirst
	}
	if s.SkipFirstWait != 0 {
		m["skip_first_wait"] = s.SkipFirstWait
	}
	return m
}

// Trace is what ProfileKwargs.OnTraceReady receives when a recording cycle
// ends (torch's RECORD_AND_SAVE): goaccel's *profiler.Profiler implements it.
type Trace interface {
	// ExportChromeTrace writes the events recorded so far as a Chrome trace.
	ExportChromeTrace(path string) error
	// StepNum is the profiler's current step number.
	StepNum() int
	// ProcessIndex is the rank that recorded the trace.
	ProcessIndex() int
}

// ProfileKwargs mirrors Accelerate's ProfileKwargs; package
// accelerate/profiler builds the profiler it configures
// (profiler.Build(kwargs, ...)).
type ProfileKwargs struct {
	// Activities is activities (default None: "cpu", plus "cuda" when a GPU
	// is visible). Valid names: "cpu", "cuda". "cpu" records spans and a
	// runtime/pprof CPU profile; "cuda" needs a GPU and records no
	// kernel-level events in goaccel (there is no CUPTI binding).
	Activities []string
	// ScheduleOption is schedule_option (default None: every step between
	// start and stop is recorded).
	ScheduleOption *Schedule
	// OnTraceReady is on_trace_ready (default None): called at the end of
	// every recording cycle.
	OnTraceReady func(Trace)
	// RecordShapes is record_shapes (default False): keep the input shapes
	// passed to profiler spans ("Input Dims" in the trace).
	RecordShapes bool
	// ProfileMemory is profile_memory (default False): record Go heap
	// deltas (runtime.MemStats, process-wide) around every span.
	ProfileMemory bool
	// WithStack is with_stack (default False): record the caller's file and
	// line for every span.
	WithStack bool
	// WithFlops is with_flops (default False): keep the FLOP counts passed
	// to spans.
	WithFlops bool
	// WithModules is with_modules (default False): keep the module names
	// passed to spans.
	WithModules bool
	// OutputTraceDir is output_trace_dir (default None: nothing written):
	// profile_{process_index}.json (Chrome trace) and
	// profile_{process_index}.pb.gz (pprof CPU profile) are written there.
	OutputTraceDir string
}

// NewProfileKwargs returns ProfileKwargs with Accelerate's defaults (all
// unset).
func NewProfileKwargs() ProfileKwargs { return ProfileKwargs{} }

// HandlerName implements [Handler].
func (ProfileKwargs) HandlerName() string { return "ProfileKwargs" }

// ValidActivities are the activity names goaccel knows.
var ValidActivities = []string{ActivityCPU, ActivityCUDA}

// EffectiveActivities is Activities, or torch's default when unset: "cpu",
// plus "cuda" when gpuAvailable.
func (k ProfileKwargs) EffectiveActivities(gpuAvailable bool) []string {
	if k.Activities != nil {
		return slices.Clone(k.Activities)
	}
	if gpuAvailable {
		return []string{ActivityCPU, ActivityCUDA}
	}
	return []string{ActivityCPU}
}

// ToKwargs implements [Handler]: keys "activities", "schedule_option" (a
// map[string]int), "on_trace_ready", "record_shapes", "profile_memory",
// "with_stack", "with_flops", "with_modules", "output_trace_dir".
func (k ProfileKwargs) ToKwargs() map[string]any {
	m := map[string]any{}
	if k.Activities != nil {
		m["activities"] = slices.Clone(k.Activities)
	}
	if k.ScheduleOption != nil {
		m["schedule_option"] = k.ScheduleOption.ToMap()
	}
	if k.OnTraceReady != nil {
		m["on_trace_ready"] = k.OnTraceReady
	}
	for _, f := range []struct {
		key string
		v   bool
	}{{"record_shapes", k.RecordShapes}, {"profile_memory", k.ProfileMemory}, {"with_stack", k.WithStack},
		{"with_flops", k.WithFlops}, {"with_modules", k.WithModules}} {
		if f.v {
			m[f.key] = true
		}
	}
	if k.OutputTraceDir != "" {
		m["output_trace_dir"] = k.OutputTraceDir
	}
	return m
}

// Validate implements [Handler] with Accelerate's message for a bad activity
// ("Invalid profiler activity: X. Must be one of ['cpu', 'cuda'].") and
// torch's for a bad schedule. Whether a GPU is there for "cuda" is checked
// when the profiler is built.
func (k ProfileKwargs) Validate() error {
	for _, a := range k.Activities {
		if !slices.Contains(ValidActivities, a) {
			return fmt.Errorf("Invalid profiler activity: %s. Must be one of ['cpu', 'cuda'].", a)
		}
	}
	if k.Activities != nil && len(k.Activities) == 0 {
		return errors.New("activities is empty: pass nil for the default or at least one of 'cpu', 'cuda'")
	}
	if k.ScheduleOption != nil {
		if err := k.ScheduleOption.Validate(); err != nil {
			return err
		}
	}
	return nil
}
