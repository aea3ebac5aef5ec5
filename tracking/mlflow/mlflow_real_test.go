package mlflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/goaccel/goaccel/tracking/internal/pyvenv"
)

type readback struct {
	Status           string              `json:"status"`
	RunName          string              `json:"run_name"`
	EndTime          int64               `json:"end_time"`
	ExperimentName   string              `json:"experiment_name"`
	ArtifactLocation string              `json:"artifact_location"`
	Params           map[string]string   `json:"params"`
	Tags             map[string]string   `json:"tags"`
	History          map[string][][3]any `json:"history"`
}

func readBack(t *testing.T, uri, runID string) readback {
	t.Helper()
	out := pyvenv.Run(t, ".", "testdata/readback.py", uri, runID)
	var rb readback
	if err := json.Unmarshal(out, &rb); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return rb
}

// TestRealServer logs to a real `mlflow server` and reads the run back with
// MlflowClient.
func TestRealServer(t *testing.T) {
	dir := t.TempDir()
	srv := startServer(t, dir, freePort(t))
	t.Setenv("MLFLOW_TRACKING_URI", srv.URI)
	t.Setenv("MLFLOW_TAGS", `{"team": "vision", "attempt": 2}`)
	artifacts := t.TempDir()
	log, hook := logtest.NewNullLogger()
	tr, err := New("goaccel-exp", artifacts, map[string]any{"run_name": "first", "description": "a test run", "tags": map[string]any{"ignored": "env wins"}, "logger": log})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 7000)
	cfg := map[string]any{"lr": 0.001, "epochs": 3, "optimizer": map[string]any{"name": "adam", "beta": 0.9}, "long": long}
	if err := tr.StoreInitConfiguration(cfg); err != nil {
		t.Fatal(err)
	}
	const n = 2500 // more than two log-batch requests
	// Log must not wait for the network: the server is frozen (SIGSTOP)
	// while the values are logged, and a Log that waited would never return.
	srv.freeze()
	logged := make(chan error, 1)
	go func() {
		for i := 0; i < n; i++ {
			if err := tr.Log(map[string]any{"loss": 1 / float64(i+1), "eval/acc": float64(i) / n, "lrs": map[string]float64{"a": 1, "b": 2}, "text": "skipped"}, i, nil); err != nil {
				logged <- err
				return
			}
		}
		logged <- tr.Log(map[string]any{"nan": math.NaN()}, 7, nil)
	}()
	select {
	case err := <-logged:
		srv.thaw()
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(patience):
		srv.thaw()
		t.Fatalf("logging %d calls did not return with the server frozen: Log must not wait for the network", n)
	}
	if err := tr.Finish(); err != nil {
		t.Fatal(err)
	}

	rb := readBack(t, srv.URI, tr.RunID())
	if rb.Status != "FINISHED" || rb.EndTime == 0 || rb.RunName != "first" || rb.ExperimentName != "goaccel-exp" {
		t.Errorf("run = %+v", rb)
	}
	if !strings.Contains(rb.ArtifactLocation, artifacts) {
		t.Errorf("artifact location %q, want %q", rb.ArtifactLocation, artifacts)
	}
	wantParams := map[string]string{"lr": "0.001", "epochs": "3", "optimizer/name": "adam", "optimizer/beta": "0.9", "long": long[:MaxParamValueLen]}
	if fmt.Sprint(rb.Params) != fmt.Sprint(wantParams) {
		t.Errorf("params = %v", rb.Params)
	}
	if rb.Tags["team"] != "vision" || rb.Tags["attempt"] != "2" || rb.Tags["ignored"] != "" || rb.Tags["mlflow.note.content"] != "a test run" {
		t.Errorf("tags = %v", rb.Tags)
	}
	for key, want := range map[string]func(i int) float64{
		"loss": func(i int) float64 { return 1 / float64(i+1) }, "eval/acc": func(i int) float64 { return float64(i) / n },
		"lrs/a": func(int) float64 { return 1 }, "lrs/b": func(int) float64 { return 2 },
	} {
		h := rb.History[key]
		if len(h) != n {
			t.Fatalf("%s: %d points, want %d", key, len(h), n)
		}
		seen := map[int]bool{}
		for _, p := range h {
			step := int(p[0].(float64))
			if p[1].(float64) != want(step) || seen[step] {
				t.Fatalf("%s: point %v", key, p)
			}
			seen[step] = true
		}
	}
	if h := rb.History["nan"]; len(h) != 1 || h[0][1] != "nan" || h[0][0] != 7.0 {
		t.Errorf("nan metric = %v", h)
	}
	if _, ok := rb.History["text"]; ok {
		t.Error("a string was logged as a metric")
	}
	var warnedText, warnedLong bool
	for _, e := range hook.AllEntries() {
		warnedText = warnedText || strings.Contains(e.Message, `"text"`)
		warnedLong = warnedLong || (strings.Contains(e.Message, `"long"`) && strings.Contains(e.Message, "truncated"))
	}
	if !warnedText || !warnedLong {
		t.Errorf("missing warnings (text %v, long param %v): %v", warnedText, warnedLong, hook.AllEntries())
	}
}

// TestServerDownMidRun stops the server during a run: Log keeps accepting,
// Flush retries then fails with a clear error, and once the server is back
// Finish delivers every accepted value.
func TestServerDownMidRun(t *testing.T) {
	dir := t.TempDir()
	port := freePort(t)
	srv := startServer(t, dir, port)
	log, _ := logtest.NewNullLogger()
	tr, err := Open(Options{TrackingURI: srv.URI, ExperimentName: "outage", Attempts: 3, Backoff: Backoff{Initial: 100 * time.Millisecond, Max: 400 * time.Millisecond}, FinishTimeout: 60 * time.Second, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		tr.Log(map[string]any{"x": float64(i)}, i, nil)
	}
	if err := tr.Flush(); err != nil {
		t.Fatal(err)
	}
	srv.stop()
	start := time.Now()
	for i := 100; i < 300; i++ {
		if err := tr.Log(map[string]any{"x": float64(i)}, i, nil); err != nil {
			t.Fatal(err)
		}
	}
	// A Log that waited for a delivery attempt would wait at least the
	// 100 ms backoff after the refused connection: 200 calls, 20 s at least.
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Log blocked for %v while the server was down", d)
	}
	err = tr.Flush()
	var u *undeliveredError
	if err == nil || !errors.As(err, &u) || u.metrics != 200 ||
		!strings.Contains(err.Error(), "could not deliver 200 metrics") || !strings.Contains(err.Error(), "kept and will be resent") || !strings.Contains(err.Error(), srv.URI) {
		t.Fatalf("Flush with the server down: %v", err)
	}
	if m, _, _ := tr.Pending(); m != 200 {
		t.Fatalf("%d metrics queued, want 200", m)
	}
	startServer(t, dir, port) // same store, same port
	if err := tr.Finish(); err != nil {
		t.Fatalf("Finish after the server came back: %v", err)
	}
	rb := readBack(t, srv.URI, tr.RunID())
	if rb.Status != "FINISHED" || len(rb.History["x"]) != 300 {
		t.Fatalf("status %s, %d points of x, want FINISHED and 300", rb.Status, len(rb.History["x"]))
	}
	for _, p := range rb.History["x"] {
		if p[0] != p[1] {
			t.Fatalf("point %v", p)
		}
	}
}
