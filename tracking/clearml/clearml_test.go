package clearml

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/tracking/internal/pyvenv"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
)

type session struct {
	ID            string                    `json:"id"`
	Name          string                    `json:"name"`
	ProjectName   string                    `json:"project_name"`
	EditFields    []string                  `json:"edit_fields"`
	Configuration map[string]map[string]any `json:"configuration"`
	Scalars       []map[string]any          `json:"scalars"`
	Logs          []map[string]any          `json:"logs"`
	Remote        string                    `json:"remote"`  // where clearml uploaded debug samples
	Uploads       map[string]string         `json:"uploads"` // their paths under Remote → sha256
}

// readWithClearML runs testdata/read_clearml.py: clearml's own offline
// session import steps, short of contacting a server.
func readWithClearML(t *testing.T, path string) session {
	t.Helper()
	home := t.TempDir()
	var s session
	stderr := pyvenv.ReadJSON(t, &s, []string{"HOME=" + home, "CLEARML_OFFLINE_MODE=1",
		"CLEARML_CACHE_DIR=" + filepath.Join(home, "cache"), "CLEARML_API_HOST=http://127.0.0.1:9",
		"CLEARML_NO_DEFAULT_SERVER=1"}, "testdata/read_clearml.py", path)
	if strings.Contains(stderr, "Failed reporting") {
		t.Fatalf("clearml reported failures: %s", stderr)
	}
	return s
}

type scalarKey struct {
	metric, variant string
	iter            int
}

func scalars(s session) map[scalarKey]any {
	m := map[scalarKey]any{}
	for _, e := range s.Scalars {
		if e["type"] != "training_stats_scalar" {
			continue
		}
		m[scalarKey{e["metric"].(string), e["variant"].(string), int(e["iter"].(float64))}] = e["value"]
	}
	return m
}

func TestSessionParsedByClearML(t *testing.T) {
	_, hook := test.NewNullLogger()
	logrus.AddHook(hook)
	defer logrus.StandardLogger().ReplaceHooks(make(logrus.LevelHooks))
	t.Setenv("CLEARML_PROJECT", "")
	t.Setenv("CLEARML_TASK", "")
	t.Setenv("CLEARML_CACHE_DIR", "")

	dir := t.TempDir()
	tr, err := New("myrun", dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	if err := tr.StoreInitConfiguration(map[string]any{"lr": 0.1, "bs": 32, "opt": "adam", "sched": map[string]any{"warmup": 10}}); err != nil {
		t.Fatal(err)
	}
	if err := tr.Log(map[string]any{"train_loss": 0.5, "eval_acc": 0.9, "test_f1": 0.7, "lr": 0.001, "note": "hello", "grp": map[string]int{"a": 1, "b": 2}, "bad": []int{1}}, 3, nil); err != nil {
		t.Fatal(err)
	}
	if err := tr.Log(map[string]any{"train_loss": 0.25}, 4, nil); err != nil {
		t.Fatal(err)
	}
	if err := tr.Log(map[string]any{"final": 1.5}, -1, nil); err != nil {
		t.Fatal(err)
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
	zipPath := filepath.Join(dir, "offline", tr.TaskID()+".zip")
	if tr.SessionZip() != zipPath || !strings.HasPrefix(tr.TaskID(), "offline-") {
		t.Fatalf("session zip %s, task %s", tr.SessionZip(), tr.TaskID())
	}
	s := readWithClearML(t, zipPath)
	if s.ID != tr.TaskID() || s.Name != "myrun" || s.ProjectName != "myrun" {
		t.Errorf("task: id=%s name=%s project=%s", s.ID, s.Name, s.ProjectName)
	}
	cfg, ok := s.Configuration["General"]
	if !ok || cfg["type"] != "dictionary" {
		t.Fatalf("configuration: %v", s.Configuration)
	}
	v := cfg["value"].(map[string]any)
	if v["lr"] != 0.1 || v["bs"] != 32.0 || v["opt"] != "adam" || v["sched"].(map[string]any)["warmup"] != 10.0 {
		t.Errorf("configuration value: %v", v)
	}
	got := scalars(s)
	want := map[scalarKey]any{
		{"loss", "train", 3}: 0.5, {"acc", "eval", 3}: 0.9, {"f1", "test", 3}: 0.7,
		{"lr", "train", 3}: 0.001, {"grp", "a", 3}: 1.0, {"grp", "b", 3}: 2.0,
		{"loss", "train", 4}: 0.25, {"Summary", "final", -2147483648}: 1.5,
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("scalar %v = %v, want %v", k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("scalars: got %v", got)
	}
	for _, e := range s.Scalars {
		if e["task"] != "imported-task" {
			t.Errorf("clearml did not re-target event %v", e)
		}
	}
	if len(s.Logs) != 1 || s.Logs[0]["msg"] != "note: hello" {
		t.Errorf("logs: %v", s.Logs)
	}
}

// TestFolderReadableWithoutFinish: a killed process leaves a session folder
// (which import_offline_session also accepts) holding what was logged more
// than a second before (once the background flush has run).
func TestFolderReadableWithoutFinish(t *testing.T) {
	tr, err := New("p", "", map[string]any{"cache_dir": t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	defer tr.Finish()
	if err := tr.Log(map[string]any{"eval_loss": 2.5}, 9, nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the metric in metrics.jsonl without Flush", func() bool {
		b, _ := os.ReadFile(filepath.Join(tr.SessionFolder(), metricsFile))
		return strings.Contains(string(b), `"value":2.5`)
	})
	snap := filepath.Join(t.TempDir(), "snap.zip")
	if err := zipFolder(tr.SessionFolder(), snap); err != nil {
		t.Fatal(err)
	}
	got := scalars(readWithClearML(t, snap))
	if got[scalarKey{"loss", "eval", 9}] != 2.5 || len(got) != 1 {
		t.Fatalf("scalars on disk after the background flush: %v", got)
	}
}

func TestNamesFromEnvironment(t *testing.T) {
	t.Setenv("CLEARML_PROJECT", "envproj")
	t.Setenv("CLEARML_TASK", "envtask")
	t.Setenv("CLEARML_CACHE_DIR", "/somewhere")
	tr, err := New("run", "/logs", map[string]any{"task_name": "kw"})
	if err != nil {
		t.Fatal(err)
	}
	if tr.project != "envproj" || tr.taskName != "kw" || !strings.HasPrefix(tr.SessionFolder(), "/somewhere/offline/offline-") {
		t.Errorf("project=%s task=%s folder=%s", tr.project, tr.taskName, tr.SessionFolder())
	}
	if _, err := os.Stat("/somewhere"); err == nil {
		t.Error("New created files")
	}
	if a, b := titleSeries("eval_acc"); a != "acc" || b != "eval" {
		t.Errorf("titleSeries: %s %s", a, b)
	}
	if a, b := titleSeries("evaluation"); a != "evaluation" || b != "train" {
		t.Errorf("titleSeries: %s %s", a, b)
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
