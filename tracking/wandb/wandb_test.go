package wandb

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/tracking/internal/pyvenv"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
)

// inspect runs wandb's own reader of .wandb files (`wandb leet inspect
// --json`, the Go reader inside wandb-core) and returns one map per record.
func inspect(t *testing.T, runDir string) []map[string]any {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(pyvenv.Bin(t, "wandb"), "leet", "inspect", "--json", runDir)
	cmd.Env = offlineEnv(home)
	cmd.Dir = home
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("wandb leet inspect failed: %v\nstderr: %s\nstdout: %s", err, stderr.String(), out)
	}
	// The reader skips damaged chunks and says so only on stderr.
	if e := strings.ToLower(stderr.String()); strings.Contains(e, "corrupt") || strings.Contains(e, "error") {
		t.Fatalf("wandb leet inspect reported damage: %s", stderr.String())
	}
	var recs []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("wandb leet inspect printed a non-JSON line %q: %v", line, err)
		}
		recs = append(recs, m)
	}
	if len(recs) == 0 {
		t.Fatalf("wandb leet inspect printed no records; stderr: %s", stderr.String())
	}
	return recs
}

func byType(recs []map[string]any, typ string) []map[string]any {
	var out []map[string]any
	for _, r := range recs {
		if r["type"] == typ {
			out = append(out, r[typ].(map[string]any))
		}
	}
	return out
}

func TestReadBackByWandb(t *testing.T) {
	logger, hook := test.NewNullLogger()
	_ = logger
	logrus.AddHook(hook)
	defer logrus.StandardLogger().ReplaceHooks(make(logrus.LevelHooks))

	dir := t.TempDir()
	tr, err := New("proj", dir, map[string]any{"name": "disp", "tags": []any{"t1"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	if err := tr.StoreInitConfiguration(map[string]any{"lr": 0.1, "bs": 32, "nested": map[string]any{"a": 1}, "opt": "adam"}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 70000) // spans three blocks: FIRST, MIDDLE, LAST chunks
	steps := []struct {
		values map[string]any
		step   int
	}{
		{map[string]any{"loss": 0.5, "acc": 1, "txt": "hello", "grp": map[string]float64{"x": 1.5, "y": 2}}, 0},
		{map[string]any{"loss": 0.25}, 1},
		{map[string]any{"other": 7}, -1}, // joins step 1's row and commits it, as in wandb
		{map[string]any{"loss": 0.125}, -1},
		{map[string]any{"long": long, "bad": []int{1}}, 5},
	}
	for _, s := range steps {
		if err := tr.Log(s.values, s.step, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.Log(map[string]any{"loss": 9.0}, 4, nil); err != nil { // lower step: rejected with a warning
		t.Fatal(err)
	}
	if err := tr.Finish(); err != nil {
		t.Fatal(err)
	}
	var warned []string
	for _, e := range hook.AllEntries() {
		warned = append(warned, e.Message)
	}
	joined := strings.Join(warned, "\n")
	if !strings.Contains(joined, `"bad"`) || !strings.Contains(joined, "step 4") {
		t.Errorf("expected warnings naming key \"bad\" and step 4, got:\n%s", joined)
	}

	runDir := tr.RunDir()
	if !strings.HasPrefix(filepath.Base(runDir), "offline-run-") || !strings.HasSuffix(runDir, "-"+tr.RunID()) {
		t.Fatalf("run dir %q not in wandb's offline-run-YYYYMMDD_HHMMSS-<id> layout", runDir)
	}
	if _, err := os.Stat(filepath.Join(runDir, "run-"+tr.RunID()+".wandb")); err != nil {
		t.Fatal(err)
	}
	recs := inspect(t, runDir)
	if recs[0]["type"] != "header" || recs[1]["type"] != "run" {
		t.Fatalf("want header then run first, got %v, %v", recs[0]["type"], recs[1]["type"])
	}
	for i, r := range recs {
		if n, _ := r["num"].(float64); int(n) != i+1 {
			t.Errorf("record %d has num %v", i, r["num"])
		}
	}
	run := byType(recs, "run")[0]
	if run["run_id"] != tr.RunID() || run["project"] != "proj" || run["display_name"] != "disp" {
		t.Errorf("run record: %v", run)
	}
	cfg := byType(recs, "config")
	if len(cfg) != 1 {
		t.Fatalf("want 1 config record, got %d", len(cfg))
	}
	upd := cfg[0]["update"].(map[string]any)
	if upd["lr"] != 0.1 || upd["bs"] != 32.0 || upd["opt"] != "adam" {
		t.Errorf("config: %v", upd)
	}
	if n, _ := upd["nested"].(map[string]any); n["a"] != 1.0 {
		t.Errorf("config nested: %v", upd["nested"])
	}

	hist := byType(recs, "history")
	want := []map[string]any{
		{"_step": 0.0, "loss": 0.5, "acc": 1.0, "txt": "hello", "grp.x": 1.5, "grp.y": 2.0},
		{"_step": 1.0, "loss": 0.25, "other": 7.0},
		{"_step": 2.0, "loss": 0.125},
		{"_step": 5.0, "long": long},
	}
	if len(hist) != len(want) {
		t.Fatalf("want %d history rows, got %d: %v", len(want), len(hist), hist)
	}
	for i, w := range want {
		got := hist[i]["item"].(map[string]any)
		for k, v := range w {
			if got[k] != v {
				t.Errorf("history row %d key %s = %.80v, want %.80v", i, k, got[k], v)
			}
		}
		if _, ok := got["bad"]; ok {
			t.Errorf("history row %d holds the unloggable key", i)
		}
		if _, ok := got["_runtime"]; !ok {
			t.Errorf("history row %d lacks _runtime", i)
		}
	}
	sums := byType(recs, "summary")
	if len(sums) == 0 {
		t.Fatal("no summary records")
	}
	latest := map[string]any{}
	for _, s := range sums {
		for k, v := range s["update"].(map[string]any) {
			latest[k] = v
		}
	}
	if latest["loss"] != 0.125 || latest["acc"] != 1.0 || latest["_step"] != 5.0 {
		t.Errorf("summary: loss=%v acc=%v _step=%v", latest["loss"], latest["acc"], latest["_step"])
	}
	if recs[len(recs)-1]["type"] != "exit" {
		t.Errorf("last record is %v, want exit", recs[len(recs)-1]["type"])
	}

	// wandb's run-state view of the same file.
	cmd := exec.Command(pyvenv.Bin(t, "wandb"), "leet", "inspect", "--summary", "--json", runDir)
	cmd.Env = offlineEnv(t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("wandb leet inspect --summary: %v", err)
	}
	var state struct {
		State    string         `json:"state"`
		ExitCode *int           `json:"exit_code"`
		Project  string         `json:"project"`
		RunID    string         `json:"run_id"`
		Config   map[string]any `json:"config"`
		Summary  map[string]any `json:"summary"`
	}
	if err := json.Unmarshal(out, &state); err != nil {
		t.Fatalf("summary JSON: %v", err)
	}
	if state.State != "finished" || state.ExitCode == nil || *state.ExitCode != 0 || state.Project != "proj" || state.RunID != tr.RunID() {
		t.Errorf("run state: %+v", state)
	}
	if state.Config["lr"] != 0.1 || state.Summary["loss"] != 0.125 {
		t.Errorf("run state config=%v summary loss=%v", state.Config, state.Summary["loss"])
	}
}

// TestFlushedWithoutFinish checks that a run killed without Finish keeps what
// was logged more than a second earlier (once the background flush has run),
// as read by wandb's own reader.
func TestFlushedWithoutFinish(t *testing.T) {
	tr, err := New("proj", t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	defer tr.Finish()
	if err := tr.StoreInitConfiguration(map[string]any{"lr": 0.01}); err != nil {
		t.Fatal(err)
	}
	if err := tr.Log(map[string]any{"loss": 1.5}, 7, nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the history and config records without Finish", func() bool {
		b, _ := os.ReadFile(filepath.Join(tr.RunDir(), "run-"+tr.RunID()+".wandb"))
		return bytes.Contains(b, []byte("loss")) && bytes.Contains(b, []byte("lr"))
	})
	recs := inspect(t, tr.RunDir())
	hist := byType(recs, "history")
	if len(hist) != 1 || hist[0]["item"].(map[string]any)["loss"] != 1.5 {
		t.Fatalf("history on disk after the background flush: %v", hist)
	}
	if len(byType(recs, "config")) != 1 {
		t.Fatalf("config not on disk after the background flush")
	}
}

func TestOnlineModeSyncsAfterFinish(t *testing.T) {
	tr, err := New("proj", t.TempDir(), map[string]any{"mode": "online"})
	if err != nil {
		t.Fatal(err)
	}
	var synced string
	tr.syncCommand = func(_ context.Context, dir string) error { synced = dir; return nil }
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	if err := tr.Log(map[string]any{"a": 1}, -1, nil); err != nil {
		t.Fatal(err)
	}
	if synced != "" {
		t.Fatal("synced before Finish")
	}
	if err := tr.Finish(); err != nil {
		t.Fatal(err)
	}
	if synced != tr.RunDir() {
		t.Fatalf("synced %q, want %q", synced, tr.RunDir())
	}
}

func TestNoWandbCLIExplainsHowToUpload(t *testing.T) {
	logger, hook := test.NewNullLogger()
	_ = logger
	logrus.AddHook(hook)
	defer logrus.StandardLogger().ReplaceHooks(make(logrus.LevelHooks))
	t.Setenv("PATH", t.TempDir())
	if err := runWandbSync(context.Background(), "/some/run"); err != nil {
		t.Fatal(err)
	}
	if e := hook.LastEntry(); e == nil || !strings.Contains(e.Message, "wandb sync /some/run") {
		t.Fatalf("no instruction logged: %v", e)
	}
}

func TestNewCreatesNothingAndValidates(t *testing.T) {
	dir := t.TempDir()
	if _, err := New("p", dir, nil); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("New created %v", entries)
	}
	if _, err := New("p", dir, map[string]any{"mode": "sideways"}); err == nil {
		t.Fatal("bad mode accepted")
	}
	if _, err := New("p", dir, map[string]any{"tags": 3}); err == nil {
		t.Fatal("bad tags accepted")
	}
	tr, _ := New("p", dir, nil)
	if err := tr.Log(map[string]any{"a": 1}, 0, nil); err == nil {
		t.Fatal("Log before Start accepted")
	}
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
