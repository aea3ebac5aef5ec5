package accelerate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/goaccel/goaccel/display"
	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/tracking"
	"github.com/goaccel/goaccel/tracking/livechart"
	"github.com/goaccel/goaccel/tracking/tensorboard"
)

// fakeSink records display calls (display.SetSink).
type fakeSink struct {
	mu    sync.Mutex
	ids   []string // Display ids, in order
	texts []string // every bundle's text/plain
}

func (f *fakeSink) Stream(string, string) {}
func (f *fakeSink) ClearOutput(bool)      {}
func (f *fakeSink) Display(d frontend.MIMEBundle, _ map[string]any, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ids = append(f.ids, id)
	f.texts = append(f.texts, textOf(d))
}
func (f *fakeSink) UpdateDisplay(d frontend.MIMEBundle, _ map[string]any, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.texts = append(f.texts, textOf(d))
}

func textOf(d frontend.MIMEBundle) string {
	s, _ := d["text/plain"].(string)
	return s
}

func (f *fakeSink) snapshot() (ids, texts []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ids...), append([]string(nil), f.texts...)
}

func installSink(t *testing.T) *fakeSink {
	t.Helper()
	s := &fakeSink{}
	t.Cleanup(display.SetSink(s))
	return s
}

func TestTrackerSelectionErrors(t *testing.T) {
	t.Setenv("GOACCEL_AIM_PYTHON", filepath.Join(t.TempDir(), "no-python")) // aim unavailable: "all" skips it
	choices := "['all', 'aim', 'tensorboard', 'wandb', 'comet_ml', 'mlflow', 'clearml', 'dvclive', 'livechart']"
	cases := []struct {
		opts []Option
		want string
	}{
		{[]Option{WithLogWith("nope")}, "Unsupported logging capability: nope. Choose between " + choices},
		{[]Option{WithLogWith([]string{"dvclive", "nope2"})}, "Unsupported logging capability: nope2. Choose between " + choices},
		{[]Option{WithLogWith("tensorboard")}, "Logging with `tensorboard` requires a `logging_dir` to be passed in."},
		{[]Option{WithLogWith(tracking.TensorBoard)}, "Logging with `tensorboard` requires a `logging_dir` to be passed in."},
		{[]Option{WithLogWith("all")}, "Logging with `tensorboard` requires a `logging_dir` to be passed in."},
		{[]Option{WithLogWith(42)}, "Unsupported logging capability: 42. Choose between " + choices},
	}
	for i, c := range cases {
		fresh(t)
		_, err := NewAccelerator(append([]Option{withEnv(envMap(nil))}, c.opts...)...)
		if err == nil || err.Error() != c.want {
			t.Errorf("case %d: err = %v\nwant %s", i, err, c.want)
		}
		if StateInitialized() {
			t.Errorf("case %d: a failed NewAccelerator left the process state behind", i)
		}
	}
	// A logging directory satisfies tensorboard: from project_dir, or the
	// configuration's logging_dir.
	for _, opt := range []Option{WithProjectDir(t.TempDir()), WithProjectConfiguration(ProjectConfiguration{LoggingDir: t.TempDir()})} {
		fresh(t)
		a, err := NewAccelerator(withEnv(envMap(nil)), WithLogWith("tensorboard"), opt)
		if err != nil || a.LoggingDir() == "" {
			t.Fatalf("with a directory: %v", err)
		}
	}
	fresh(t)
	a, err := NewAccelerator(withEnv(envMap(nil)), WithProjectConfiguration(ProjectConfiguration{ProjectDir: "p", LoggingDir: "l"}))
	if err != nil || a.ProjectDir() != "p" || a.LoggingDir() != "l" {
		t.Fatalf("ProjectConfiguration: %v %q %q", err, a.ProjectDir(), a.LoggingDir())
	}
}

// venvPython is the Python of the tracker tests' venv (tracking's
// internal/pyvenv rule); the test fails, never skips, when it is missing.
func venvPython(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("GOACCEL_VENV")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "goaccel", "venv")
	}
	py := filepath.Join(dir, "bin", "python")
	if _, err := os.Stat(py); err != nil {
		t.Fatalf("the Python test environment is missing (%v): run `make test-deps` or set GOACCEL_VENV", err)
	}
	return py
}

func TestTrackersEndToEnd(t *testing.T) {
	fresh(t)
	sink := installSink(t)
	dir := t.TempDir()
	var out bytes.Buffer
	a, err := NewAccelerator(withEnv(envMap(nil)), WithOutput(&out), WithProjectDir(dir), WithLogWith("tensorboard", tracking.DVCLive))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Log(map[string]any{"early": 1}, 0, nil); err != nil {
		t.Fatalf("Log before InitTrackers: %v", err)
	}
	if err := a.InitTrackers("proj", map[string]any{"lr": 0.1, "epochs": 3}, map[string]map[string]any{"livechart": {"interval": 0.01}}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names(a.Trackers()), ","); got != "tensorboard,dvclive,livechart" {
		t.Fatalf("trackers = %s", got)
	}
	if err := a.InitTrackers("proj", nil, nil); err == nil || !strings.Contains(err.Error(), "already called") {
		t.Fatalf("second InitTrackers: %v", err)
	}
	for step := 0; step < 5; step++ {
		if err := a.Log(map[string]any{"loss": 1 / float64(step+1), "acc": float32(step) / 10}, step, nil); err != nil {
			t.Fatal(err)
		}
	}
	tb, err := a.GetTracker("tensorboard", false)
	if _, ok := tb.(*tensorboard.Tracker); err != nil || !ok {
		t.Fatalf("GetTracker(tensorboard) = %T, %v", tb, err)
	}
	if u, err := a.GetTracker("livechart", true); err != nil || u.(*livechart.Tracker) == nil {
		t.Fatalf("GetTracker(livechart, unwrap) = %T, %v", u, err)
	}
	if _, err := a.GetTracker("wandb", false); err == nil || err.Error() != "wandb is not an available tracker stored inside the `Accelerator`." {
		t.Fatalf("GetTracker(wandb): %v", err)
	}
	if err := a.EndTraining(); err != nil {
		t.Fatal(err)
	}
	if err := a.EndTraining(); err != nil {
		t.Fatalf("second EndTraining: %v", err)
	}

	// TensorBoard: an event file under <logging_dir>/<project>, and the
	// configuration.
	events, _ := filepath.Glob(filepath.Join(dir, "proj", "events.out.tfevents.*"))
	if len(events) != 1 {
		t.Fatalf("tensorboard event files: %v", events)
	}
	if fi, err := os.Stat(events[0]); err != nil || fi.Size() < 200 {
		t.Fatalf("event file: %v %v", fi, err)
	}
	// DVCLive: <logging_dir>/dvclive, every step flushed by EndTraining.
	var metrics map[string]any
	b, err := os.ReadFile(filepath.Join(dir, "dvclive", "metrics.json"))
	if err != nil || json.Unmarshal(b, &metrics) != nil || metrics["step"] != 4.0 || metrics["loss"] != 0.2 {
		t.Fatalf("dvclive metrics.json: %s %v", b, err)
	}
	f, err := os.Open(filepath.Join(dir, "dvclive", "plots", "metrics", "loss.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var steps []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Split(sc.Text(), "\t"); len(fs) == 3 {
			steps = append(steps, fs[1])
		}
	}
	if got := strings.Join(steps, ","); got != "step,0,1,2,3,4" {
		t.Fatalf("dvclive loss.tsv steps = %s", got)
	}
	// The live chart drew under the cell: one display, its final state
	// showing the last loss.
	ids, texts := sink.snapshot()
	if len(ids) != 1 || len(texts) == 0 || !strings.Contains(texts[len(texts)-1], "loss") || !strings.Contains(texts[len(texts)-1], "0.2") {
		t.Fatalf("live chart display calls: ids %v, last text %q", ids, texts)
	}

	// TensorBoard's own reader sees the steps.
	cmd := exec.Command(venvPython(t), "../tracking/tensorboard/testdata/readback.py", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	rb, err := cmd.Output()
	if err != nil {
		t.Fatalf("readback.py: %v\n%s", err, stderr.String())
	}
	var got struct {
		EA map[string]struct {
			Scalars map[string][][2]float64 `json:"scalars"`
		} `json:"ea"`
	}
	if err := json.Unmarshal(rb, &got); err != nil {
		t.Fatalf("readback output: %v\n%s", err, rb)
	}
	loss := got.EA["proj"].Scalars["loss"]
	if len(loss) != 5 {
		t.Fatalf("EventAccumulator loss = %v (runs %v)", loss, got.EA)
	}
	for i, p := range loss {
		if p[0] != float64(i) || float32(p[1]) != float32(1/float64(i+1)) {
			t.Fatalf("EventAccumulator loss[%d] = %v", i, p)
		}
	}
}

// recorder is a custom tracker, as a cell would define one.
type recorder struct {
	mu       sync.Mutex
	calls    []string
	config   map[string]any
	lastKw   map[string]any
	finishes int
}

func (r *recorder) Name() string                   { return "custom" }
func (r *recorder) RequiresLoggingDirectory() bool { return false }
func (r *recorder) MainProcessOnly() bool          { return true }
func (r *recorder) Tracker() any                   { return "underlying" }
func (r *recorder) Start() error                   { r.add("start"); return nil }
func (r *recorder) StoreInitConfiguration(v map[string]any) error {
	r.add("config")
	r.config = v
	return nil
}
func (r *recorder) Log(v map[string]any, step int, kw map[string]any) error {
	r.add("log")
	r.lastKw = kw
	if v["fail"] != nil {
		return errors.New("boom")
	}
	return nil
}
func (r *recorder) Finish() error { r.add("finish"); r.finishes++; return nil }
func (r *recorder) add(s string) {
	r.mu.Lock()
	r.calls = append(r.calls, s)
	r.mu.Unlock()
}

func TestCustomTrackerAndLiveChartSwitch(t *testing.T) {
	installSink(t)
	rec := &recorder{}
	fresh(t)
	a, err := NewAccelerator(withEnv(envMap(map[string]string{EnvLiveChart: "0"})), WithLogWith(rec))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.InitTrackers("p", map[string]any{"lr": 0.5}, nil); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names(a.Trackers()), ","); got != "custom" {
		t.Fatalf("GOACCEL_LIVECHART=0: trackers %s", got)
	}
	if err := a.Log(map[string]any{"x": 1}, 3, map[string]map[string]any{"custom": {"commit": true}, "other": {"no": 1}}); err != nil {
		t.Fatal(err)
	}
	if rec.lastKw["commit"] != true || len(rec.lastKw) != 1 {
		t.Fatalf("log kwargs = %v", rec.lastKw)
	}
	if err := a.Log(map[string]any{"fail": 1}, 4, nil); err == nil || !strings.Contains(err.Error(), "custom tracker: log: boom") {
		t.Fatalf("failing tracker: %v", err)
	}
	if u, err := a.GetTracker("custom", true); err != nil || u != "underlying" {
		t.Fatalf("GetTracker unwrap = %v, %v", u, err)
	}
	if err := a.LogTable("t", []string{"a"}, [][]any{{1}}, 1, nil); err != nil {
		t.Fatalf("LogTable on a tracker without tables: %v", err)
	}
	if err := a.EndTraining(); err != nil {
		t.Fatal(err)
	}
	a.EndTraining()
	if got := strings.Join(rec.calls, ","); got != "start,config,log,log,finish" || rec.config["lr"] != 0.5 {
		t.Fatalf("calls %s, config %v", got, rec.config)
	}

	// The option wins over the environment.
	fresh(t)
	a, err = NewAccelerator(withEnv(envMap(map[string]string{EnvLiveChart: "false"})), WithLiveChart(true))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.InitTrackers("p", nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names(a.Trackers()), ","); got != "livechart" {
		t.Fatalf("WithLiveChart(true): trackers %s", got)
	}
	a.EndTraining()
	fresh(t)
	if _, err := NewAccelerator(withEnv(envMap(map[string]string{EnvLiveChart: "maybe"}))); err == nil || !strings.Contains(err.Error(), EnvLiveChart) {
		t.Fatalf("bad %s: %v", EnvLiveChart, err)
	}
}

func TestTrackersOnlyOnMainProcess(t *testing.T) {
	sink := installSink(t)
	dir := t.TempDir()
	accs := accelerators(t, 2)
	specs, err := tracking.Filter([]any{"tensorboard"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range accs {
		a.trackerSpecs, a.loggingDir, a.liveChart = specs, dir, true
	}
	err = each(accs, func(a *Accelerator) error {
		if err := a.InitTrackers("run", map[string]any{"seed": 1}, nil); err != nil {
			return err
		}
		for s := 0; s < 3; s++ {
			if err := a.Log(map[string]any{"loss": float64(a.ProcessIndex()*10 + s)}, s, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Rank 1: NoOps, for any name, every method callable.
	r1 := accs[1]
	if got := strings.Join(names(r1.Trackers()), ","); got != "tensorboard" {
		t.Fatalf("rank 1 trackers: %s", got)
	}
	if _, ok := r1.Trackers()[0].(*tracking.NoOp); !ok {
		t.Fatalf("rank 1 tracker is %T, want a NoOp", r1.Trackers()[0])
	}
	for _, unwrap := range []bool{false, true} {
		tr, err := r1.GetTracker("wandb", unwrap)
		n, ok := tr.(*tracking.NoOp)
		if err != nil || !ok || n.Name() != "wandb" {
			t.Fatalf("rank 1 GetTracker(wandb, %v) = %T %v, %v", unwrap, tr, tr, err)
		}
		if n.Log(map[string]any{"a": 1}, 1, nil) != nil || n.LogImages(nil, 1, nil) != nil || n.LogTable("t", nil, nil, 1, nil) != nil || n.Finish() != nil {
			t.Fatal("NoOp method failed")
		}
	}
	if r1.LogImages(map[string]any{}, 1, nil) != nil || r1.LogTable("t", nil, nil, 1, nil) != nil {
		t.Fatal("rank 1 LogImages/LogTable failed")
	}
	if _, err := accs[0].GetTracker("wandb", false); err == nil {
		t.Fatal("rank 0 GetTracker(wandb) succeeded")
	}
	if err := each(accs, (*Accelerator).EndTraining); err != nil {
		t.Fatal(err)
	}
	// Only rank 0 wrote and drew.
	events, _ := filepath.Glob(filepath.Join(dir, "run", "events.out.tfevents.*"))
	if len(events) != 1 {
		t.Fatalf("event files: %v", events)
	}
	ids, texts := sink.snapshot()
	if len(ids) != 1 {
		t.Fatalf("display calls from %d charts, want 1 (rank 0's)", len(ids))
	}
	if last := texts[len(texts)-1]; !strings.Contains(last, "loss") || strings.Contains(last, "12") {
		t.Fatalf("live chart shows %q: want rank 0's loss only", last)
	}
}
