package dvclive

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/goaccel/goaccel/tracking/internal/pyvenv"
	"github.com/goaccel/goaccel/tracking/values"
)

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFiles(t *testing.T) {
	began := time.Now().UnixMilli()
	dir := t.TempDir()
	log, hook := logtest.NewNullLogger()
	tr, err := New("ignored", dir, map[string]any{"logger": log})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Dir() != filepath.Join(dir, "dvclive") {
		t.Fatalf("dir = %s", tr.Dir())
	}
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	if err := tr.StoreInitConfiguration(map[string]any{"lr": 0.001, "model": map[string]any{"depth": 3}}); err != nil {
		t.Fatal(err)
	}
	if err := tr.Log(map[string]any{"train/loss": 0.5, "acc": 1, "note": "hi"}, 3, nil); err != nil {
		t.Fatal(err)
	}
	if err := tr.Log(map[string]any{"train/loss": 0.25, "acc": 2, "grp": map[string]int{"x": 7}}, 5, nil); err != nil {
		t.Fatal(err)
	}
	if err := tr.Finish(); err != nil {
		t.Fatal(err)
	}
	d := tr.Dir()
	if got, want := read(t, filepath.Join(d, "dvc.yaml")), "params:\n- params.yaml\nmetrics:\n- metrics.json\nplots:\n- plots/metrics:\n    x: step\n"; got != want {
		t.Errorf("dvc.yaml =\n%s\nwant\n%s", got, want)
	}
	if got, want := read(t, filepath.Join(d, "params.yaml")), "lr: 0.001\nmodel:\n    depth: 3\n"; got != want {
		t.Errorf("params.yaml =\n%q\nwant\n%q", got, want)
	}
	want := "{\n    \"acc\": 2,\n    \"grp\": {\n        \"x\": 7\n    },\n    \"train\": {\n        \"loss\": 0.25\n    },\n    \"step\": 5\n}\n"
	if got := read(t, filepath.Join(d, "metrics.json")); got != want {
		t.Errorf("metrics.json =\n%s\nwant\n%s", got, want)
	}
	loss := read(t, filepath.Join(d, "plots", "metrics", "train", "loss.tsv"))
	lines := strings.Split(strings.TrimSpace(loss), "\n")
	if len(lines) != 3 || lines[0] != "timestamp\tstep\tloss" {
		t.Fatalf("loss.tsv =\n%s", loss)
	}
	for i, wantRow := range []string{"3\t0.5", "5\t0.25"} {
		ts, rest, _ := strings.Cut(lines[i+1], "\t")
		var ms int64
		if _, err := fmt.Sscan(ts, &ms); err != nil || ms < began || ms > time.Now().UnixMilli() || rest != wantRow {
			t.Errorf("loss.tsv row %d = %q", i, lines[i+1])
		}
	}
	if len(hook.AllEntries()) != 1 || !strings.Contains(hook.LastEntry().Message, `"note"`) {
		t.Errorf("want one warning naming note, got %v", hook.AllEntries())
	}
}

func TestNoStepAndNoAdvance(t *testing.T) {
	tr := Open(Options{Dir: filepath.Join(t.TempDir(), "dl")})
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	// Two calls at the same step stay at that step (Accelerate's tracker
	// would advance after each call).
	for _, v := range []float64{1, 2} {
		if err := tr.Log(map[string]any{"a": v}, 10, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []float64{3, 4} {
		if err := tr.Log(map[string]any{"a": v}, values.NoStep, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.Finish(); err != nil {
		t.Fatal(err)
	}
	var steps []string
	for _, line := range strings.Split(strings.TrimSpace(read(t, filepath.Join(tr.Dir(), "plots", "metrics", "a.tsv"))), "\n")[1:] {
		f := strings.Split(line, "\t")
		steps = append(steps, f[1]+"="+f[2])
	}
	if got := strings.Join(steps, " "); got != "10=1 10=2 0=3 1=4" {
		t.Errorf("rows %s", got)
	}
}

func TestBackgroundFlush(t *testing.T) {
	tr := Open(Options{Dir: filepath.Join(t.TempDir(), "dl")})
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	defer tr.Finish()
	if err := tr.Log(map[string]any{"a": 1.5}, 1, nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a.tsv and metrics.json without Flush", func() bool {
		tsv, _ := os.ReadFile(filepath.Join(tr.Dir(), "plots", "metrics", "a.tsv"))
		js, _ := os.ReadFile(filepath.Join(tr.Dir(), "metrics.json"))
		return strings.HasSuffix(string(tsv), "\t1\t1.5\n") && strings.Contains(string(js), `"a": 1.5`)
	})
}

func TestRejectsEscapingNames(t *testing.T) {
	log, hook := logtest.NewNullLogger()
	root := t.TempDir()
	tr := Open(Options{Dir: filepath.Join(root, "dl"), Logger: log})
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	if err := tr.Log(map[string]any{"../../evil": 1}, 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := tr.Finish(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "evil.tsv")); err == nil {
		t.Error("a metric name escaped the plots directory")
	}
	if len(hook.AllEntries()) != 1 || !strings.Contains(hook.LastEntry().Message, "../../evil") {
		t.Errorf("want a warning naming the key, got %v", hook.AllEntries())
	}
}

// TestReadBackWithDVC writes a run and reads it with `dvc metrics show`,
// dvc.api.params_show, `dvc plots show` and dvclive's own parsers.
func TestReadBackWithDVC(t *testing.T) {
	dvc := pyvenv.Bin(t, "dvc")
	root := t.TempDir()
	cmd := exec.Command(dvc, "init", "--no-scm", "-q")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("dvc init: %v\n%s", err, out)
	}
	tr, err := New("proj", root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	if err := tr.StoreInitConfiguration(map[string]any{"lr": 0.01, "epochs": 4, "opt": map[string]any{"name": "adam"}}); err != nil {
		t.Fatal(err)
	}
	const n = 50
	for i := 0; i < n; i++ {
		if err := tr.Log(map[string]any{"loss": 1 / float64(i+1), "eval/acc": float64(i) / 100, "epoch": i / 10}, i*3, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.Finish(); err != nil {
		t.Fatal(err)
	}
	out := pyvenv.Run(t, ".", "testdata/readback.py", root, "dvclive")
	var rb struct {
		MetricsShow map[string]any                 `json:"metrics_show"`
		ParamsShow  map[string]any                 `json:"params_show"`
		PlotsShow   map[string]any                 `json:"plots_show"`
		History     map[string][]map[string]string `json:"history"`
		Latest      map[string]any                 `json:"latest"`
		Params      map[string]any                 `json:"params"`
		DVCYAML     map[string]any                 `json:"dvcyaml"`
	}
	if err := json.Unmarshal(out, &rb); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// dvc metrics show --json: {"": {"data": {"dvclive/metrics.json": {"data": {...}}}}}
	mdata := dig(t, rb.MetricsShow, "", "data", "dvclive/metrics.json", "data")
	wantLatest := map[string]any{"loss": 1 / float64(n), "epoch": float64((n - 1) / 10), "step": float64((n - 1) * 3), "eval": map[string]any{"acc": float64(n-1) / 100}}
	if fmt.Sprint(mdata) != fmt.Sprint(wantLatest) {
		t.Errorf("dvc metrics show = %v, want %v", mdata, wantLatest)
	}
	if fmt.Sprint(rb.Latest) != fmt.Sprint(wantLatest) {
		t.Errorf("dvclive parse_metrics latest = %v", rb.Latest)
	}
	// dvc.api.params_show merges every params file of the repository.
	if pdata := rb.ParamsShow; fmt.Sprint(pdata) != fmt.Sprint(map[string]any{"lr": 0.01, "epochs": 4.0, "opt": map[string]any{"name": "adam"}}) {
		t.Errorf("dvc.api.params_show = %v", pdata)
	}
	if fmt.Sprint(rb.Params) != fmt.Sprint(map[string]any{"lr": 0.01, "epochs": 4.0, "opt": map[string]any{"name": "adam"}}) {
		t.Errorf("dvclive load_yaml(params.yaml) = %v", rb.Params)
	}
	for name, col := range map[string]string{"loss.tsv": "loss", "eval/acc.tsv": "acc", "epoch.tsv": "epoch"} {
		rows := rb.History[name]
		if len(rows) != n {
			t.Fatalf("history %s has %d rows, want %d (%v)", name, len(rows), n, keysOf(rb.History))
		}
		for i, r := range rows {
			var v float64
			fmt.Sscan(r[col], &v)
			want := map[string]float64{"loss": 1 / float64(i+1), "acc": float64(i) / 100, "epoch": float64(i / 10)}[col]
			if r["step"] != fmt.Sprint(i*3) || v != want || r["timestamp"] == "" {
				t.Fatalf("history %s row %d = %v", name, i, r)
			}
		}
	}
	// dvc plots show --json lists the TSVs as plots of the dvclive directory.
	plots := fmt.Sprint(rb.PlotsShow)
	for _, p := range []string{"dvclive/plots/metrics/loss.tsv", "dvclive/plots/metrics/eval/acc.tsv"} {
		if !strings.Contains(plots, p) {
			t.Errorf("dvc plots show does not list %s: %s", p, plots)
		}
	}
	if fmt.Sprint(rb.DVCYAML["plots"]) != "[map[plots/metrics:map[x:step]]]" {
		t.Errorf("dvc.yaml plots = %v", rb.DVCYAML["plots"])
	}
}

func dig(t *testing.T, m map[string]any, path ...string) map[string]any {
	t.Helper()
	cur := m
	for _, p := range path {
		next, ok := cur[p].(map[string]any)
		if !ok {
			t.Fatalf("no %q in %v (path %v)", p, cur, path)
		}
		cur = next
	}
	return cur
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// eventually polls cond until it holds: the background flush writes when
// the scheduler lets it (within a second on an idle machine), and only a
// flush that never comes fails the test (after a 5 min hang guard).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5 min", what)
		}
	}
}
