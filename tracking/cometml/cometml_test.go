package cometml

import (
	"archive/zip"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goaccel/goaccel/tracking/internal/pyvenv"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
)

type readBack struct {
	ExperimentID string           `json:"experiment_id"`
	Metadata     map[string]any   `json:"metadata"`
	Metrics      []map[string]any `json:"metrics"`
	Parameters   []map[string]any `json:"parameters"`
	Others       map[string]any   `json:"others"`
	Uploads      []map[string]any `json:"uploads"` // file uploads (images)
}

// readWithComet runs testdata/read_comet.py: comet_ml's own unzip, metadata
// validation and offline message loop over the archive.
func readWithComet(t *testing.T, archive string) readBack {
	t.Helper()
	home := t.TempDir()
	var rb readBack
	pyvenv.ReadJSON(t, &rb, []string{"HOME=" + home, "COMET_API_KEY=", "COMET_OFFLINE_DIRECTORY=" + home,
		"COMET_DISABLE_ANNOUNCEMENT=1", "COMET_URL_OVERRIDE=http://127.0.0.1:9/clientlib/"}, "testdata/read_comet.py", archive)
	return rb
}

func metricKey(m map[string]any) string {
	if s, ok := m["step"].(float64); ok {
		return fmt.Sprintf("%s@%d", m["metricName"], int(s))
	}
	return fmt.Sprintf("%s@none", m["metricName"])
}

func TestOfflineArchiveReadByCometML(t *testing.T) {
	_, hook := test.NewNullLogger()
	logrus.AddHook(hook)
	defer logrus.StandardLogger().ReplaceHooks(make(logrus.LevelHooks))

	dir := t.TempDir()
	t.Setenv("COMET_API_KEY", "")
	t.Setenv("COMET_OFFLINE_DIRECTORY", "")
	tr, err := New("proj", dir, map[string]any{"tags": []any{"t1"}, "experiment_name": "exp1"})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Online() {
		t.Fatal("online without an API key")
	}
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	if err := tr.StoreInitConfiguration(map[string]any{"lr": 0.1, "bs": 32, "opt": "adam", "nested": map[string]any{"a": 1}, "layers": []int{1, 2}}); err != nil {
		t.Fatal(err)
	}
	if err := tr.Log(map[string]any{"loss": 0.5, "acc": 1, "note": "hello", "grp": map[string]float64{"train": 1.5, "eval": 2}}, 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := tr.Log(map[string]any{"loss": 0.25, "bad": []int{1}, "nan": math.NaN()}, 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := tr.Log(map[string]any{"final": 3}, -1, nil); err != nil {
		t.Fatal(err)
	}
	if err := tr.Finish(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(messages(hook), `"bad"`) {
		t.Errorf("no warning names \"bad\": %s", messages(hook))
	}
	archive := filepath.Join(dir, tr.ExperimentKey()+".zip")
	if tr.ArchivePath() != archive {
		t.Fatalf("archive path %s", tr.ArchivePath())
	}
	if _, err := os.Stat(archive + "/../" + tr.ExperimentKey() + ".staging"); err == nil {
		t.Error("staging directory left behind")
	}
	rb := readWithComet(t, archive)
	if rb.ExperimentID != tr.ExperimentKey() || rb.Metadata["project_name"] != "proj" {
		t.Errorf("metadata: id=%v %v", rb.ExperimentID, rb.Metadata)
	}
	if tags, _ := rb.Metadata["tags"].([]any); len(tags) != 1 || tags[0] != "t1" {
		t.Errorf("tags: %v", rb.Metadata["tags"])
	}
	got := map[string]any{}
	for _, m := range rb.Metrics {
		got[metricKey(m)] = m["metricValue"]
	}
	want := map[string]any{"loss@0": 0.5, "acc@0": 1.0, "grp/train@0": 1.5, "grp/eval@0": 2.0, "loss@1": 0.25, "nan@1": "NaN", "final@none": 3.0}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("metric %s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("metrics: got %v, want %v", got, want)
	}
	params := map[string]any{}
	for _, p := range rb.Parameters {
		params[p["paramName"].(string)] = p["paramValue"]
	}
	wantParams := map[string]any{"lr": 0.1, "bs": 32.0, "opt": "adam", "nested|a": 1.0, "layers": "[1,2]"}
	for k, v := range wantParams {
		if params[k] != v {
			t.Errorf("parameter %s = %v, want %v", k, params[k], v)
		}
	}
	if rb.Others["note"] != "hello" || rb.Others["Name"] != "exp1" || rb.Others["offline_experiment"] != true || rb.Others["hasNestedParams"] != true {
		t.Errorf("others: %v", rb.Others)
	}
}

func messages(h *test.Hook) string {
	var s []string
	for _, e := range h.AllEntries() {
		s = append(s, e.Message)
	}
	return strings.Join(s, "\n")
}

// TestArchiveOnDiskWithoutFinish: a killed process leaves a readable archive
// holding what was logged more than a second earlier (once the background
// flush has rewritten it).
func TestArchiveOnDiskWithoutFinish(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("COMET_API_KEY", "")
	tr, err := New("proj", dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	defer tr.Finish()
	if err := tr.Log(map[string]any{"loss": 0.75}, 3, nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the metric in the archive without Finish", func() bool {
		z, err := zip.OpenReader(tr.ArchivePath()) // rewritten whole, then renamed
		if err != nil {
			return false
		}
		defer z.Close()
		for _, f := range z.File {
			if r, err := f.Open(); err == nil {
				b, _ := io.ReadAll(r)
				r.Close()
				if strings.Contains(string(b), "0.75") {
					return true
				}
			}
		}
		return false
	})
	snapshot := filepath.Join(t.TempDir(), "snap.zip")
	copyFile(t, tr.ArchivePath(), snapshot)
	rb := readWithComet(t, snapshot)
	if len(rb.Metrics) != 1 || rb.Metrics[0]["metricValue"] != 0.75 {
		t.Fatalf("metrics in the unfinished archive: %v", rb.Metrics)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestArchiveLayout(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("COMET_API_KEY", "")
	tr, _ := New("proj", "", map[string]any{"offline_directory": dir})
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	if err := tr.Finish(); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.OpenReader(filepath.Join(dir, tr.ExperimentKey()+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	names := map[string]bool{}
	for _, f := range zr.File {
		names[f.Name] = true
		if f.Name == messagesFile {
			rc, _ := f.Open()
			b, _ := io.ReadAll(rc)
			rc.Close()
			for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				var m struct {
					Type    string         `json:"type"`
					Payload map[string]any `json:"payload"`
				}
				if err := json.Unmarshal([]byte(l), &m); err != nil || m.Type == "" || m.Payload == nil {
					t.Errorf("bad messages.json line %q: %v", l, err)
				}
			}
		}
	}
	if len(names) != 2 || !names[experimentFile] || !names[messagesFile] {
		t.Fatalf("archive holds %v", names)
	}
}

func TestDefaultsAndValidation(t *testing.T) {
	t.Setenv("COMET_API_KEY", "")
	t.Setenv("COMET_OFFLINE_DIRECTORY", "")
	tr, err := New("proj", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(tr.ArchivePath()) != DefaultOfflineDir || len(tr.ExperimentKey()) != 32 {
		t.Errorf("archive %s", tr.ArchivePath())
	}
	if _, err := New("p", "", map[string]any{"experiment_key": "short"}); err == nil {
		t.Error("short experiment key accepted")
	}
	if _, err := New("p", "", map[string]any{"online": true}); err == nil {
		t.Error("online without API key accepted")
	}
	if tr.Name() != "comet_ml" || tr.RequiresLoggingDirectory() || !tr.MainProcessOnly() {
		t.Error("tracker attributes")
	}
}

// fakeComet stands in for Comet's REST API v2 (the cloud cannot run here).
type fakeComet struct {
	mu       sync.Mutex
	requests []fakeRequest
}

type fakeRequest struct {
	path, auth string
	body       map[string]any
}

func (f *fakeComet) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	f.mu.Lock()
	f.requests = append(f.requests, fakeRequest{r.URL.Path, r.Header.Get("Authorization"), body})
	f.mu.Unlock()
	if r.Header.Get("Authorization") != "secret" {
		http.Error(w, `{"msg":"bad key"}`, http.StatusUnauthorized)
		return
	}
	if r.URL.Path == "/api/rest/v2/write/experiment/create" {
		_, _ = w.Write([]byte(`{"experimentKey":"0123456789abcdef0123456789abcdef","link":"x"}`))
		return
	}
	_, _ = w.Write([]byte(`{}`))
}

func TestOnlineREST(t *testing.T) {
	fake := &fakeComet{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	t.Setenv("COMET_URL_OVERRIDE", srv.URL+"/clientlib/")
	t.Setenv("COMET_API_KEY", "secret")
	dir := t.TempDir()
	tr, err := New("proj", dir, map[string]any{"workspace": "ws", "tags": []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Online() {
		t.Fatal("not online with COMET_API_KEY")
	}
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	if tr.ExperimentKey() != "0123456789abcdef0123456789abcdef" {
		t.Fatalf("key %s", tr.ExperimentKey())
	}
	_ = tr.StoreInitConfiguration(map[string]any{"lr": 0.1})
	_ = tr.Log(map[string]any{"loss": 0.5, "grp": map[string]int{"x": 2}, "txt": "hi"}, 4, nil)
	if err := tr.Finish(); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("online mode wrote files: %v", entries)
	}
	byPath := map[string][]map[string]any{}
	for _, r := range fake.requests {
		if r.auth != "secret" {
			t.Errorf("%s sent without the API key", r.path)
		}
		byPath[strings.TrimPrefix(r.path, "/api/rest/v2/")] = append(byPath[strings.TrimPrefix(r.path, "/api/rest/v2/")], r.body)
	}
	if c := byPath["write/experiment/create"]; len(c) != 1 || c[0]["projectName"] != "proj" || c[0]["workspaceName"] != "ws" {
		t.Errorf("create: %v", c)
	}
	metrics := map[string]float64{}
	for _, m := range byPath["write/experiment/metric"] {
		if m["experimentKey"] != "0123456789abcdef0123456789abcdef" || m["step"] != 4.0 {
			t.Errorf("metric request %v", m)
		}
		metrics[m["metricName"].(string)] = m["metricValue"].(float64)
	}
	if metrics["loss"] != 0.5 || metrics["grp/x"] != 2 || len(metrics) != 2 {
		t.Errorf("metrics %v", metrics)
	}
	if p := byPath["write/experiment/parameter"]; len(p) != 1 || p[0]["parameterName"] != "lr" || p[0]["parameterValue"] != 0.1 {
		t.Errorf("parameters %v", p)
	}
	if o := byPath["write/experiment/log-other"]; len(o) != 1 || o[0]["key"] != "txt" || o[0]["value"] != "hi" {
		t.Errorf("log-other %v", o)
	}
	if tg := byPath["write/experiment/tags"]; len(tg) != 1 {
		t.Errorf("tags %v", tg)
	}
	if e := byPath["write/experiment/set-start-end-time"]; len(e) != 1 || e[0]["endTimeMillis"] == nil {
		t.Errorf("end %v", e)
	}
}

func TestOnlineErrorsReported(t *testing.T) {
	fake := &fakeComet{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	t.Setenv("COMET_URL_OVERRIDE", srv.URL)
	tr, _ := New("proj", "", map[string]any{"api_key": "wrong"})
	err := tr.Start()
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("want a 401 error from Start, got %v", err)
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
