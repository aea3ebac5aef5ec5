package profiler

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/accelerate/kwargs"
)

var sink []byte

var sched = &kwargs.Schedule{Wait: 1, Warmup: 1, Active: 2, Repeat: 2, SkipFirst: 1}

func TestScheduleActions(t *testing.T) {
	var got []string
	for s := 0; s < 11; s++ {
		got = append(got, ScheduleAction(sched, s).String())
	}
	want := []string{"NONE", // skip_first
		"NONE", "WARMUP", "RECORD", "RECORD_AND_SAVE", // cycle 1
		"NONE", "WARMUP", "RECORD", "RECORD_AND_SAVE", // cycle 2
		"NONE", "NONE"} // repeat exhausted
	if !reflect.DeepEqual(got, want) {
		t.Errorf("actions %v\nwant    %v", got, want)
	}
	if a := ActiveSteps(sched, 20); !reflect.DeepEqual(a, []int{3, 4, 7, 8}) {
		t.Errorf("active steps %v, want [3 4 7 8]", a)
	}
	if a := ActiveSteps(nil, 3); !reflect.DeepEqual(a, []int{0, 1, 2}) {
		t.Errorf("no schedule: %v", a)
	}
	// repeat=0 cycles forever; skip_first_wait shifts the first wait away.
	if a := ActiveSteps(&kwargs.Schedule{Wait: 2, Active: 1}, 9); !reflect.DeepEqual(a, []int{2, 5, 8}) {
		t.Errorf("repeat 0: %v", a)
	}
	if a := ActiveSteps(&kwargs.Schedule{Wait: 2, Active: 1, Repeat: 2, SkipFirstWait: 1}, 9); !reflect.DeepEqual(a, []int{0, 3}) {
		t.Errorf("skip_first_wait: %v", a)
	}
}

func busy(d time.Duration) {
	x := 0.0
	for end := time.Now().Add(d); time.Now().Before(end); {
		for i := 0; i < 1000; i++ {
			x += float64(i) * 1.0000001
		}
	}
	_ = x
}

func TestProfilerScheduleTraceAndPprof(t *testing.T) {
	dir := t.TempDir()
	var ready []int
	kw := kwargs.ProfileKwargs{ScheduleOption: sched, OutputTraceDir: dir, RecordShapes: true, ProfileMemory: true,
		WithStack: true, WithFlops: true, OnTraceReady: func(tr kwargs.Trace) { ready = append(ready, tr.StepNum()) }}
	begin := float64(time.Now().UnixMicro())
	p, err := Run(kw, Options{ProcessIndex: 3}, func(p *Profiler) error {
		for s := 0; s < 11; s++ {
			end := p.Span(fmt.Sprintf("work%d", s), Shapes([]int{2, 3}), Flops(12), Module("ignored"))
			sink = make([]byte, 1<<16)
			busy(15 * time.Millisecond)
			end()
			end() // a second call does nothing
			if err := p.Step(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// on_trace_ready at the end of each cycle: when stepping from 4 to 5 and 8 to 9.
	if !reflect.DeepEqual(ready, []int{5, 9}) || p.Cycles() != 2 {
		t.Errorf("on_trace_ready at steps %v, cycles %d", ready, p.Cycles())
	}
	var names []string
	for _, e := range p.Events() {
		names = append(names, e.Name)
	}
	wantNames := []string{"work3", "ProfilerStep#3", "work4", "ProfilerStep#4", "work7", "ProfilerStep#7", "work8", "ProfilerStep#8"}
	if !reflect.DeepEqual(names, wantNames) {
		t.Errorf("events %v\nwant   %v", names, wantNames)
	}

	// The Chrome trace: valid JSON, Perfetto's required fields.
	raw, err := os.ReadFile(filepath.Join(dir, "profile_3.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&tr); err != nil {
		t.Fatalf("trace is not JSON: %v", err)
	}
	var xs []map[string]any
	for i, e := range tr.TraceEvents {
		for _, k := range []string{"name", "ph", "pid", "tid", "ts"} {
			if _, ok := e[k]; !ok {
				t.Fatalf("event %d lacks %q: %v", i, k, e)
			}
		}
		if _, ok := e["name"].(string); !ok {
			t.Fatalf("event %d name not a string", i)
		}
		if pid, _ := e["pid"].(json.Number).Int64(); pid != 3 {
			t.Fatalf("event %d pid %v, want the process index 3", i, e["pid"])
		}
		if _, err := e["tid"].(json.Number).Int64(); err != nil {
			t.Fatalf("event %d tid %v not an integer", i, e["tid"])
		}
		switch e["ph"] {
		case "M":
		case "X":
			xs = append(xs, e)
		default:
			t.Fatalf("event %d has ph %v", i, e["ph"])
		}
	}
	if len(xs) != 8 {
		t.Fatalf("%d X events, want 8", len(xs))
	}
	now := float64(time.Now().UnixMicro())
	for _, e := range xs {
		ts, err1 := e["ts"].(json.Number).Float64()
		dur, err2 := e["dur"].(json.Number).Float64()
		if err1 != nil || err2 != nil || dur < 0 || ts > now || ts < begin-1 || ts+dur > now+1 {
			t.Fatalf("bad ts/dur in %v", e)
		}
		if strings.HasPrefix(e["name"].(string), "work") {
			if dur < 15000 {
				t.Errorf("%v lasted %vµs, want >= 15000", e["name"], dur)
			}
			args := e["args"].(map[string]any)
			if fmt.Sprint(args["Input Dims"]) != "[[2 3]]" || fmt.Sprint(args["flops"]) != "12" || args["module"] != nil {
				t.Errorf("args %v: want shapes and flops, no module (with_modules off)", args)
			}
			if a, _ := args["alloc_bytes"].(json.Number).Int64(); a < 1<<16 {
				t.Errorf("alloc_bytes %v, want >= 65536", args["alloc_bytes"])
			}
			if st := fmt.Sprint(args["stack"]); !strings.Contains(st, "profiler_test.go") {
				t.Errorf("stack %s does not name the caller", st)
			}
		}
	}

	// The CPU profile: gzip, and `go tool pprof` reads it.
	pb := filepath.Join(dir, "profile_3.pb.gz")
	f, err := os.ReadFile(pb)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(f))
	if err != nil {
		t.Fatalf("pprof file is not gzip: %v", err)
	}
	if b, err := io.ReadAll(zr); err != nil || len(b) == 0 {
		t.Fatalf("pprof payload: %d bytes, %v", len(b), err)
	}
	for _, c := range []string{"profile_3_cycle0.pb.gz", "profile_3_cycle1.pb.gz"} {
		if _, err := os.Stat(filepath.Join(dir, c)); err != nil {
			t.Error(err)
		}
	}
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(goBin, "tool", "pprof", "-top", pb).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -top: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "Type: cpu") {
		t.Fatalf("pprof output lacks 'Type: cpu':\n%s", out)
	}
	if w := p.Warnings(); len(w) != 0 {
		t.Errorf("warnings: %v", w)
	}
	if tab := p.Table(); !strings.Contains(tab, "ProfilerStep#3") || !strings.Contains(tab, "work8") {
		t.Errorf("table:\n%s", tab)
	}
}

func TestProfilerNoScheduleAndOptionsOff(t *testing.T) {
	p, err := Build(kwargs.ProfileKwargs{Activities: []string{"cpu"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.RecordFunction("before start")() // not kept
	if err := p.Step(); err == nil {
		t.Error("Step before Start accepted")
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	end := p.Span("a", Shapes([]int{1}), Flops(5))
	end()
	p.Step()
	p.RecordFunction("b")()
	p.Stop()
	p.RecordFunction("after stop")()
	var names []string
	for _, e := range p.Events() {
		names = append(names, e.Name)
		if e.Args != nil {
			t.Errorf("%s has args %v with every option off", e.Name, e.Args)
		}
	}
	if !reflect.DeepEqual(names, []string{"a", "ProfilerStep#0", "b", "ProfilerStep#1"}) {
		t.Errorf("events %v", names)
	}
	if p.Cycles() != 1 || len(p.CPUProfiles()) != 1 {
		t.Errorf("cycles %d profiles %d", p.Cycles(), len(p.CPUProfiles()))
	}
	// A second CPU profiler in the process: a warning, not a failure.
	p1, _ := Build(kwargs.ProfileKwargs{}, Options{})
	p2, _ := Build(kwargs.ProfileKwargs{}, Options{ProcessIndex: 1})
	p1.Start()
	p2.Start()
	p2.Stop()
	p1.Stop()
	if w := p2.Warnings(); len(w) != 1 || !strings.Contains(w[0], "no CPU profile for cycle 0") {
		t.Errorf("warnings %v", w)
	}
	if len(p1.CPUProfiles()) != 1 {
		t.Error("first profiler lost its CPU profile")
	}
}

func TestProfilerActivityErrors(t *testing.T) {
	_, err := Build(kwargs.ProfileKwargs{Activities: []string{"cuda"}}, Options{CUDAVisibleDevices: "-1"})
	if err == nil || err.Error() != `profiler: profiling activity "cuda" needs a GPU; none is visible (CUDA_VISIBLE_DEVICES="-1")` {
		t.Errorf("cuda without GPU: %v", err)
	}
	t.Setenv("CUDA_VISIBLE_DEVICES", "")
	_, err = Build(kwargs.ProfileKwargs{Activities: []string{"cpu", "cuda"}}, Options{})
	if err == nil || err.Error() != `profiler: profiling activity "cuda" needs a GPU; none is visible (CUDA_VISIBLE_DEVICES is unset)` {
		t.Errorf("cuda without GPU: %v", err)
	}
	p, err := Build(kwargs.ProfileKwargs{Activities: []string{"cuda"}}, Options{GPUAvailable: true})
	if err != nil || len(p.Warnings()) != 1 {
		t.Errorf("cuda with GPU: %v %v", err, p.Warnings())
	}
	_, err = Build(kwargs.ProfileKwargs{Activities: []string{"xpu"}}, Options{})
	if err == nil || err.Error() != "profiler: ProfileKwargs: Invalid profiler activity: xpu. Must be one of ['cpu', 'cuda']." {
		t.Errorf("bad activity: %v", err)
	}
	// Default activities without a GPU: cpu only, no error.
	if _, err := Build(kwargs.ProfileKwargs{}, Options{}); err != nil {
		t.Error(err)
	}
}
