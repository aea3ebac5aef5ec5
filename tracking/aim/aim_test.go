package aim

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goaccel/goaccel/tracking/internal/pyvenv"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
)

type seq struct {
	Name    string         `json:"name"`
	Context map[string]any `json:"context"`
	Steps   []int          `json:"steps"`
	Values  []any          `json:"values"`
}

type run struct {
	Hash       string         `json:"hash"`
	Name       string         `json:"name"`
	Experiment string         `json:"experiment"`
	Hparams    map[string]any `json:"hparams"`
	Active     bool           `json:"active"`
	Metrics    []seq          `json:"metrics"`
	Texts      []seq          `json:"texts"`
	Images     []imageSeq     `json:"images"`
}

type imageSeq struct {
	Name    string         `json:"name"`
	Context map[string]any `json:"context"`
	Steps   []int          `json:"steps"`
	Values  []struct {
		List   bool `json:"list"`
		Images []struct {
			Caption    string `json:"caption"`
			Width      int    `json:"width"`
			Height     int    `json:"height"`
			Format     string `json:"format"`
			RGBASHA256 string `json:"rgba_sha256"`
		} `json:"images"`
	} `json:"values"`
}

// readWithAim runs testdata/read_aim.py: aim.Repo(dir).iter_runs().
func readWithAim(t *testing.T, repo string) []run {
	t.Helper()
	var runs []run
	pyvenv.ReadJSON(t, &runs, []string{"HOME=" + t.TempDir()}, "testdata/read_aim.py", repo)
	return runs
}

func find(seqs []seq, name string, ctx map[string]any) *seq {
	for i, s := range seqs {
		if s.Name != name || len(s.Context) != len(ctx) {
			continue
		}
		match := true
		for k, v := range ctx {
			if s.Context[k] != v {
				match = false
			}
		}
		if match {
			return &seqs[i]
		}
	}
	return nil
}

func quietKwargs() map[string]any {
	return map[string]any{"system_tracking_interval": nil, "log_system_params": false, "capture_terminal_logs": false}
}

func TestRunReadByAim(t *testing.T) {
	_, hook := test.NewNullLogger()
	logrus.AddHook(hook)
	defer logrus.StandardLogger().ReplaceHooks(make(logrus.LevelHooks))
	t.Setenv("GOACCEL_AIM_PYTHON", pyvenv.Python(t))

	repo := t.TempDir()
	tr, err := New("myrun", repo, quietKwargs())
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	if tr.RunHash() == "" {
		t.Fatal("no run hash after Start")
	}
	if err := tr.StoreInitConfiguration(map[string]any{"lr": 0.1, "nested": map[string]any{"a": 1}, "opt": "adam"}); err != nil {
		t.Fatal(err)
	}
	// Log must not wait for the bridge: it is frozen (SIGSTOP) while the
	// values are logged, and a Log that waited would never return.
	_ = tr.cmd.Process.Signal(syscall.SIGSTOP)
	logs := []struct {
		values map[string]any
		step   int
		kwargs map[string]any
	}{
		{map[string]any{"loss": 0.5, "acc": 1, "note": "hello", "grp": map[string]float64{"train": 1.5, "eval": 2}, "bad": []int{1}}, 0, nil},
		{map[string]any{"loss": 0.25, "inf": math.Inf(1)}, 1, nil},
		{map[string]any{"loss": 0.125}, -1, nil},
		{map[string]any{"loss": 0.9}, 1, map[string]any{"context": map[string]any{"subset": "val"}, "epoch": 2}},
	}
	logged := make(chan error, 1)
	go func() {
		for _, l := range logs {
			if err := tr.Log(l.values, l.step, l.kwargs); err != nil {
				logged <- err
				return
			}
		}
		logged <- nil
	}()
	select {
	case err := <-logged:
		_ = tr.cmd.Process.Signal(syscall.SIGCONT)
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Minute):
		_ = tr.cmd.Process.Signal(syscall.SIGCONT)
		t.Fatal("Log waited for the frozen bridge")
	}
	if err := tr.Finish(); err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, e := range hook.AllEntries() {
		msgs = append(msgs, e.Message)
	}
	if !strings.Contains(strings.Join(msgs, "\n"), `"bad"`) {
		t.Errorf("no warning names \"bad\": %v", msgs)
	}

	runs := readWithAim(t, repo)
	if len(runs) != 1 {
		t.Fatalf("aim lists %d runs, want 1", len(runs))
	}
	r := runs[0]
	if r.Hash != tr.RunHash() || r.Name != "myrun" || r.Experiment != "myrun" || r.Active {
		t.Errorf("run: hash=%s name=%s experiment=%s active=%v", r.Hash, r.Name, r.Experiment, r.Active)
	}
	if r.Hparams["lr"] != 0.1 || r.Hparams["opt"] != "adam" || r.Hparams["nested"].(map[string]any)["a"] != 1.0 {
		t.Errorf("hparams: %v", r.Hparams)
	}
	check := func(name string, ctx map[string]any, steps []int, values []any) {
		t.Helper()
		s := find(r.Metrics, name, ctx)
		if s == nil {
			t.Errorf("no metric %s %v in %+v", name, ctx, r.Metrics)
			return
		}
		if len(s.Steps) != len(steps) || len(s.Values) != len(values) {
			t.Errorf("metric %s %v: steps %v values %v, want %v %v", name, ctx, s.Steps, s.Values, steps, values)
			return
		}
		for i := range steps {
			if s.Steps[i] != steps[i] || s.Values[i] != values[i] {
				t.Errorf("metric %s %v: steps %v values %v, want %v %v", name, ctx, s.Steps, s.Values, steps, values)
				return
			}
		}
	}
	check("loss", nil, []int{0, 1, 2}, []any{0.5, 0.25, 0.125})
	check("acc", nil, []int{0}, []any{1.0})
	check("grp", map[string]any{"subset": "train"}, []int{0}, []any{1.5})
	check("grp", map[string]any{"subset": "eval"}, []int{0}, []any{2.0})
	check("loss", map[string]any{"subset": "val"}, []int{1}, []any{0.9})
	if s := find(r.Metrics, "inf", nil); s == nil || len(s.Values) != 1 || s.Values[0] != "inf" {
		t.Errorf("inf metric: %+v", s)
	}
	if txt := find(r.Texts, "note", nil); txt == nil || len(txt.Values) != 1 || txt.Values[0] != "hello" {
		t.Errorf("text: %+v", r.Texts)
	}
}

func TestMissingAimExplains(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed for this test: %v", err)
	}
	if exec.Command(py, "-c", "import aim").Run() == nil {
		// Use a Python that cannot import aim: isolated mode ignores
		// site-packages of the venv but not of a system install, so hide
		// aim behind a stub that fails to import.
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "aim.py"), []byte("raise ImportError('stub')\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Setenv("PYTHONPATH", dir)
	}
	t.Setenv("GOACCEL_AIM_PYTHON", py)
	tr, err := New("r", t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	err = tr.Start()
	if err == nil || !strings.Contains(err.Error(), "pip install aim") {
		t.Fatalf("want an error telling to pip install aim, got %v", err)
	}
	if err := tr.Log(map[string]any{"a": 1}, 0, nil); err == nil {
		t.Fatal("Log accepted after a failed Start")
	}
}

func TestNoSuchPython(t *testing.T) {
	t.Setenv("GOACCEL_AIM_PYTHON", filepath.Join(t.TempDir(), "nopython"))
	tr, _ := New("r", t.TempDir(), nil)
	if err := tr.Start(); err == nil || !strings.Contains(err.Error(), "GOACCEL_AIM_PYTHON") {
		t.Fatalf("want an error naming GOACCEL_AIM_PYTHON, got %v", err)
	}
}

func TestPythonErrorsReportedAtFinish(t *testing.T) {
	t.Setenv("GOACCEL_AIM_PYTHON", pyvenv.Python(t))
	tr, err := New("r", t.TempDir(), quietKwargs())
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	if err := tr.Log(map[string]any{"a": 1}, 0, map[string]any{"epoch": "x"}); err == nil {
		t.Error("bad epoch accepted")
	}
	// A request the Python side rejects must surface at Finish, with the
	// Python error text.
	tr.mu.Lock()
	_ = tr.send(map[string]any{"op": "explode"}, "")
	tr.mu.Unlock()
	if err := tr.Log(map[string]any{"a": 1}, 0, nil); err != nil {
		t.Fatal(err)
	}
	err = tr.Finish()
	if err == nil || !strings.Contains(err.Error(), "1 request(s) failed") || !strings.Contains(err.Error(), "unknown op 'explode'") {
		t.Fatalf("want the Python failure reported, got %v", err)
	}
}

func TestNewValidatesAndStartsNothing(t *testing.T) {
	if _, err := New("r", "", map[string]any{"repo": "x"}); err == nil {
		t.Error("repo kwarg accepted")
	}
	tr, err := New("r", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Repo() != "." || !tr.RequiresLoggingDirectory() || tr.Name() != "aim" {
		t.Errorf("defaults: repo=%s", tr.Repo())
	}
	if err := tr.Finish(); err != nil {
		t.Errorf("Finish before Start: %v", err)
	}
}

// TestGoSideGoneClosesRun: if the Go process dies, the bridge sees end of
// input and still closes (and indexes) the run with what it received.
func TestGoSideGoneClosesRun(t *testing.T) {
	t.Setenv("GOACCEL_AIM_PYTHON", pyvenv.Python(t))
	repo := t.TempDir()
	tr, err := New("gone", repo, quietKwargs())
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	if err := tr.Log(map[string]any{"loss": 3.5}, 4, nil); err != nil {
		t.Fatal(err)
	}
	tr.queue.close() // stdin closes without a "close" request, as on a crash
	<-tr.writerDone
	<-tr.readerDone
	if err := tr.cmd.Wait(); err != nil {
		t.Fatalf("bridge exit: %v\n%s", err, tr.stderr.String())
	}
	runs := readWithAim(t, repo)
	if len(runs) != 1 {
		t.Fatalf("%d runs", len(runs))
	}
	if s := find(runs[0].Metrics, "loss", nil); s == nil || len(s.Values) != 1 || s.Values[0] != 3.5 || s.Steps[0] != 4 {
		t.Fatalf("metrics: %+v", runs[0].Metrics)
	}
}
