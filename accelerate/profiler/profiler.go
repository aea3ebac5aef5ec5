package profiler

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goaccel/goaccel/accelerate/kwargs"
)

// TraceFileName is Accelerate's PROFILE_PATTERN_NAME ("profile_{suffix}.json").
func TraceFileName(processIndex int) string { return fmt.Sprintf("profile_%d.json", processIndex) }

// PprofFileName names the CPU profile written beside the trace.
func PprofFileName(processIndex int) string { return fmt.Sprintf("profile_%d.pb.gz", processIndex) }

// Options are the facts about the process the profiler runs in.
type Options struct {
	// ProcessIndex is the rank: the trace's pid and the files' suffix.
	ProcessIndex int
	// GPUAvailable says whether a GPU is visible; the "cuda" activity needs
	// one.
	GPUAvailable bool
	// CUDAVisibleDevices is quoted in the error for "cuda" without a GPU;
	// "" reads CUDA_VISIBLE_DEVICES from the environment.
	CUDAVisibleDevices string
}

// Event is one recorded span (a Chrome trace "X" complete event).
type Event struct {
	Name  string
	Cat   string
	Start time.Time
	Dur   time.Duration
	TID   int64 // goroutine id
	Cycle int   // recording cycle (0-based)
	Args  map[string]any
}

// Profiler records spans and a CPU profile during the active steps of a
// schedule. Build it with Build, then Start, Step once per training step,
// Stop, and Export. Safe for concurrent use (spans may be recorded from any
// goroutine).
type Profiler struct {
	k    kwargs.ProfileKwargs
	o    Options
	cpu  bool
	cuda bool

	mu        sync.Mutex
	started   bool
	stopped   bool
	step      int
	action    Action
	stepStart time.Time
	cycle     int // cycles completed
	events    []Event
	cpuBuf    *bytes.Buffer
	cpuOn     bool
	profiles  [][]byte // one CPU profile per completed cycle
	warnings  []string
}

// Build validates k and returns a profiler honouring it (torch's
// ProfileKwargs.build()). The "cuda" activity without a GPU is an error.
func Build(k kwargs.ProfileKwargs, o Options) (*Profiler, error) {
	if err := k.Validate(); err != nil {
		return nil, fmt.Errorf("profiler: ProfileKwargs: %w", err)
	}
	p := &Profiler{k: k, o: o}
	for _, a := range k.EffectiveActivities(o.GPUAvailable) {
		switch a {
		case kwargs.ActivityCPU:
			p.cpu = true
		case kwargs.ActivityCUDA:
			if !o.GPUAvailable {
				vis := o.CUDAVisibleDevices
				if vis == "" {
					vis = os.Getenv("CUDA_VISIBLE_DEVICES")
				}
				if vis == "" {
					return nil, errors.New("profiler: profiling activity \"cuda\" needs a GPU; none is visible (CUDA_VISIBLE_DEVICES is unset)")
				}
				return nil, fmt.Errorf("profiler: profiling activity \"cuda\" needs a GPU; none is visible (CUDA_VISIBLE_DEVICES=%q)", vis)
			}
			p.cuda = true
			p.warnings = append(p.warnings, "profiling activity \"cuda\": goaccel records no GPU kernel events (no CUPTI binding); only host-side spans are traced")
		}
	}
	return p, nil
}

// Kwargs returns the configuration the profiler was built from.
func (p *Profiler) Kwargs() kwargs.ProfileKwargs { return p.k }

// ProcessIndex implements kwargs.Trace.
func (p *Profiler) ProcessIndex() int { return p.o.ProcessIndex }

// StepNum implements kwargs.Trace: the current step (0 before the first Step).
func (p *Profiler) StepNum() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.step
}

// CurrentAction is the schedule's action for the current step.
func (p *Profiler) CurrentAction() Action {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.started || p.stopped {
		return None
	}
	return p.action
}

// Cycles is the number of completed recording cycles.
func (p *Profiler) Cycles() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cycle
}

// Warnings lists what the profiler could not do (e.g. a CPU profile already
// running in this process) and the activities it only partly covers.
func (p *Profiler) Warnings() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.warnings)
}

// Start begins profiling at step 0.
func (p *Profiler) Start() error {
	p.mu.Lock()
	if p.started {
		p.mu.Unlock()
		return errors.New("profiler: Start called twice")
	}
	p.started = true
	p.step = 0
	p.stepStart = time.Now()
	p.action = ScheduleAction(p.k.ScheduleOption, 0)
	ready := p.transit(None, p.action, false)
	p.mu.Unlock()
	p.fire(ready)
	return nil
}

// Step ends the current step and moves to the next (torch's prof.step()).
// It returns an error only when the profiler is not running.
func (p *Profiler) Step() error {
	p.mu.Lock()
	if !p.started || p.stopped {
		p.mu.Unlock()
		return errors.New("profiler: Step called outside Start/Stop")
	}
	p.endStep()
	prev := p.action
	p.step++
	p.action = ScheduleAction(p.k.ScheduleOption, p.step)
	ready := p.transit(prev, p.action, false)
	p.mu.Unlock()
	p.fire(ready)
	return nil
}

// Stop ends profiling: a cycle still recording is closed (its trace is
// ready). Calling Stop again does nothing.
func (p *Profiler) Stop() error {
	p.mu.Lock()
	if !p.started || p.stopped {
		p.mu.Unlock()
		return nil
	}
	p.endStep()
	ready := p.transit(p.action, None, true)
	p.stopped = true
	p.mu.Unlock()
	p.fire(ready)
	return nil
}

// endStep records the ProfilerStep#N span of a recorded step. p.mu held.
func (p *Profiler) endStep() {
	now := time.Now()
	if p.action.Recording() {
		p.events = append(p.events, Event{Name: "ProfilerStep#" + strconv.Itoa(p.step), Cat: "user_annotation",
			Start: p.stepStart, Dur: now.Sub(p.stepStart), TID: goid(), Cycle: p.cycle})
	}
	p.stepStart = now
}

// transit applies torch's action transitions; it returns whether a trace
// became ready (the caller fires on_trace_ready without the lock). p.mu held.
func (p *Profiler) transit(prev, cur Action, stopping bool) bool {
	ready := false
	if prev.Recording() && (prev == RecordAndSave || !cur.Recording() || stopping) {
		p.stopCPU()
		if prev == RecordAndSave || stopping {
			ready = true
		}
		p.cycle++
	}
	if !stopping && cur.Recording() && (!prev.Recording() || prev == RecordAndSave) {
		p.startCPU()
	}
	return ready
}

func (p *Profiler) fire(ready bool) {
	if ready && p.k.OnTraceReady != nil {
		p.k.OnTraceReady(p)
	}
}

func (p *Profiler) startCPU() {
	if !p.cpu {
		return
	}
	p.cpuBuf = new(bytes.Buffer)
	if err := pprof.StartCPUProfile(p.cpuBuf); err != nil {
		p.warnings = append(p.warnings, "no CPU profile for cycle "+strconv.Itoa(p.cycle)+": "+err.Error())
		p.cpuBuf = nil
		return
	}
	p.cpuOn = true
}

func (p *Profiler) stopCPU() {
	if !p.cpuOn {
		return
	}
	pprof.StopCPUProfile()
	p.cpuOn = false
	p.profiles = append(p.profiles, p.cpuBuf.Bytes())
	p.cpuBuf = nil
}

// SpanOption adds information to a span.
type SpanOption func(*spanInfo)

type spanInfo struct {
	shapes [][]int
	flops  int64
	module string
	cat    string
}

// Shapes attaches input shapes ("Input Dims"; kept with record_shapes).
func Shapes(shapes ...[]int) SpanOption {
	return func(s *spanInfo) { s.shapes = shapes }
}

// Flops attaches a FLOP count ("flops"; kept with with_flops).
func Flops(n int64) SpanOption { return func(s *spanInfo) { s.flops = n } }

// Module attaches a module name ("module"; kept with with_modules).
func Module(name string) SpanOption { return func(s *spanInfo) { s.module = name } }

// Category sets the trace category (default "user_annotation").
func Category(cat string) SpanOption { return func(s *spanInfo) { s.cat = cat } }

// RecordFunction starts a span named name and returns the function that ends
// it (torch.profiler.record_function):
//
//	defer prof.RecordFunction("forward")()
//
// Spans started outside a recorded step are not kept. The end function may be
// called once; later calls do nothing.
func (p *Profiler) RecordFunction(name string) func() { return p.span(name, nil) }

// Span is RecordFunction with options (shapes, FLOPs, module, category).
func (p *Profiler) Span(name string, opts ...SpanOption) func() { return p.span(name, opts) }

func (p *Profiler) span(name string, opts []SpanOption) func() {
	p.mu.Lock()
	rec := p.started && !p.stopped && p.action.Recording()
	cycle := p.cycle
	p.mu.Unlock()
	if !rec {
		return func() {}
	}
	var info spanInfo
	for _, o := range opts {
		o(&info)
	}
	args := map[string]any{}
	if p.k.RecordShapes && info.shapes != nil {
		args["Input Dims"] = info.shapes
	}
	if p.k.WithFlops && info.flops != 0 {
		args["flops"] = info.flops
	}
	if p.k.WithModules && info.module != "" {
		args["module"] = info.module
	}
	if p.k.WithStack {
		args["stack"] = callers(3)
	}
	var ms0 runtime.MemStats
	if p.k.ProfileMemory {
		runtime.ReadMemStats(&ms0)
	}
	cat := info.cat
	if cat == "" {
		cat = "user_annotation"
	}
	tid := goid()
	start := time.Now()
	var once sync.Once
	return func() {
		once.Do(func() {
			dur := time.Since(start)
			if p.k.ProfileMemory {
				var ms1 runtime.MemStats
				runtime.ReadMemStats(&ms1)
				args["alloc_bytes"] = ms1.TotalAlloc - ms0.TotalAlloc
				args["mallocs"] = ms1.Mallocs - ms0.Mallocs
				args["frees"] = ms1.Frees - ms0.Frees
				args["heap_alloc_delta"] = int64(ms1.HeapAlloc) - int64(ms0.HeapAlloc)
			}
			if len(args) == 0 {
				args = nil
			}
			p.mu.Lock()
			p.events = append(p.events, Event{Name: name, Cat: cat, Start: start, Dur: dur, TID: tid, Cycle: cycle, Args: args})
			p.mu.Unlock()
		})
	}
}

func callers(skip int) []string {
	pcs := make([]uintptr, 16)
	n := runtime.Callers(skip+1, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	var out []string
	for {
		f, more := frames.Next()
		out = append(out, fmt.Sprintf("%s:%d %s", f.File, f.Line, f.Function))
		if !more || len(out) == 8 {
			return out
		}
	}
}

// goid is the calling goroutine's id (the trace's tid).
func goid() int64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b, ok := bytes.CutPrefix(b, []byte("goroutine "))
	if !ok {
		return 0
	}
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseInt(string(b), 10, 64)
	return id
}

// Events returns the recorded spans, ProfilerStep#N included.
func (p *Profiler) Events() []Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.events)
}

// CPUProfiles returns the pprof CPU profiles, one per completed recording
// cycle (none without the "cpu" activity).
func (p *Profiler) CPUProfiles() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.profiles)
}

// traceEvent is one entry of a Chrome trace's traceEvents.
type traceEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  *float64       `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int64          `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

type chromeTrace struct {
	SchemaVersion   int            `json:"schemaVersion"`
	TraceEvents     []traceEvent   `json:"traceEvents"`
	DisplayTimeUnit string         `json:"displayTimeUnit"`
	OtherData       map[string]any `json:"otherData,omitempty"`
}

func micros(t time.Time) float64 { return float64(t.UnixNano()) / 1e3 }

// ChromeTrace returns the recorded events as a Chrome trace (JSON object
// format: traceEvents of "X" complete events, ts/dur in µs since the Unix
// epoch, pid = process index, tid = goroutine id), loadable in Perfetto and
// chrome://tracing.
func (p *Profiler) ChromeTrace() ([]byte, error) {
	p.mu.Lock()
	evs := slices.Clone(p.events)
	warn := slices.Clone(p.warnings)
	cycles := p.cycle
	p.mu.Unlock()
	pid := p.o.ProcessIndex
	t := chromeTrace{SchemaVersion: 1, DisplayTimeUnit: "ms"}
	t.TraceEvents = append(t.TraceEvents,
		traceEvent{Name: "process_name", Ph: "M", Pid: pid, Args: map[string]any{"name": fmt.Sprintf("rank %d", pid)}},
		traceEvent{Name: "process_sort_index", Ph: "M", Pid: pid, Args: map[string]any{"sort_index": pid}})
	tids := map[int64]bool{}
	for _, e := range evs {
		if !tids[e.TID] {
			tids[e.TID] = true
			t.TraceEvents = append(t.TraceEvents, traceEvent{Name: "thread_name", Ph: "M", Pid: pid, Tid: e.TID,
				Args: map[string]any{"name": fmt.Sprintf("goroutine %d", e.TID)}})
		}
	}
	for _, e := range evs {
		d := float64(e.Dur.Nanoseconds()) / 1e3
		args := map[string]any{"cycle": e.Cycle}
		for k, v := range e.Args {
			args[k] = v
		}
		t.TraceEvents = append(t.TraceEvents, traceEvent{Name: e.Name, Cat: e.Cat, Ph: "X", Ts: micros(e.Start),
			Dur: &d, Pid: pid, Tid: e.TID, Args: args})
	}
	t.OtherData = map[string]any{"producer": "goaccel profiler", "process_index": pid, "cycles": cycles,
		"activities": p.k.EffectiveActivities(p.o.GPUAvailable)}
	if len(warn) > 0 {
		t.OtherData["warnings"] = warn
	}
	return json.MarshalIndent(t, "", " ")
}

// ExportChromeTrace writes ChromeTrace to path (torch's
// export_chrome_trace); it implements kwargs.Trace.
func (p *Profiler) ExportChromeTrace(path string) error {
	b, err := p.ChromeTrace()
	if err != nil {
		return fmt.Errorf("profiler: encoding the trace: %w", err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("profiler: %w", err)
	}
	return nil
}

// Export writes, into dir (created if needed), the Chrome trace
// profile_{process_index}.json and, with the "cpu" activity, the CPU profile
// profile_{process_index}.pb.gz of the last recording cycle; when there were
// several cycles each also goes to profile_{process_index}_cycle{k}.pb.gz
// (`go tool pprof` merges several files given together). It returns the
// paths written.
func (p *Profiler) Export(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("profiler: %w", err)
	}
	idx := p.o.ProcessIndex
	tp := filepath.Join(dir, TraceFileName(idx))
	if err := p.ExportChromeTrace(tp); err != nil {
		return nil, err
	}
	paths := []string{tp}
	profs := p.CPUProfiles()
	if len(profs) == 0 {
		return paths, nil
	}
	write := func(name string, b []byte) error {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return fmt.Errorf("profiler: %w", err)
		}
		paths = append(paths, path)
		return nil
	}
	if err := write(PprofFileName(idx), profs[len(profs)-1]); err != nil {
		return paths, err
	}
	if len(profs) > 1 {
		for k, b := range profs {
			if err := write(fmt.Sprintf("profile_%d_cycle%d.pb.gz", idx, k), b); err != nil {
				return paths, err
			}
		}
	}
	return paths, nil
}

// Run is Accelerator.profile's body: build, start, run fn, stop and, when
// OutputTraceDir is set, export. The profiler is returned even when fn
// fails (its error is returned after the profiler is stopped and exported).
// Waiting for the other ranks afterwards is the caller's job.
func Run(k kwargs.ProfileKwargs, o Options, fn func(*Profiler) error) (*Profiler, error) {
	p, err := Build(k, o)
	if err != nil {
		return nil, err
	}
	if err := p.Start(); err != nil {
		return p, err
	}
	var ferr error
	if fn != nil {
		ferr = fn(p)
	}
	if err := p.Stop(); err != nil {
		return p, errors.Join(ferr, err)
	}
	if k.OutputTraceDir != "" {
		if _, err := p.Export(k.OutputTraceDir); err != nil {
			return p, errors.Join(ferr, err)
		}
	}
	return p, ferr
}

// KeyAverage aggregates the spans of one name (torch's key_averages()).
type KeyAverage struct {
	Name     string
	Count    int
	Total    time.Duration
	Min, Max time.Duration
}

// Avg is the mean duration.
func (k KeyAverage) Avg() time.Duration {
	if k.Count == 0 {
		return 0
	}
	return k.Total / time.Duration(k.Count)
}

// KeyAverages aggregates the recorded spans by name, largest total first.
func (p *Profiler) KeyAverages() []KeyAverage {
	m := map[string]*KeyAverage{}
	for _, e := range p.Events() {
		a := m[e.Name]
		if a == nil {
			a = &KeyAverage{Name: e.Name, Min: e.Dur, Max: e.Dur}
			m[e.Name] = a
		}
		a.Count++
		a.Total += e.Dur
		a.Min = min(a.Min, e.Dur)
		a.Max = max(a.Max, e.Dur)
	}
	out := make([]KeyAverage, 0, len(m))
	for _, a := range m {
		out = append(out, *a)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Total != out[j].Total {
			return out[i].Total > out[j].Total
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Table renders KeyAverages as a text table (torch's key_averages().table()).
func (p *Profiler) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-40s %8s %14s %14s %14s %14s\n", "Name", "Calls", "Total", "Avg", "Min", "Max")
	for _, a := range p.KeyAverages() {
		name := a.Name
		if len(name) > 40 {
			name = name[:37] + "..."
		}
		fmt.Fprintf(&b, "%-40s %8d %14v %14v %14v %14v\n", name, a.Count, a.Total, a.Avg(), a.Min, a.Max)
	}
	return b.String()
}
