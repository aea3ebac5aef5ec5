package mlflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	logtest "github.com/sirupsen/logrus/hooks/test"
)

// patience bounds the waits of these tests: a hang guard far above what a
// busy machine needs, never a budget.
const patience = 5 * time.Minute

// fakeServer is a minimal MLflow REST server recording log-batch requests.
type fakeServer struct {
	mu      sync.Mutex
	batches []logBatch
	created map[string]any
	updates []map[string]any
	block   chan struct{} // when non-nil, log-batch waits on it
	blocked chan struct{} // when non-nil, gets a value as a log-batch starts waiting
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/api/2.0/mlflow/")
	switch path {
	case "experiments/get-by-name":
		w.WriteHeader(404)
		w.Write([]byte(`{"error_code":"RESOURCE_DOES_NOT_EXIST","message":"no such experiment"}`))
	case "experiments/create":
		var req map[string]any
		json.NewDecoder(r.Body).Decode(&req)
		f.mu.Lock()
		f.created = req
		f.mu.Unlock()
		w.Write([]byte(`{"experiment_id":"7"}`))
	case "runs/create":
		w.Write([]byte(`{"run":{"info":{"run_id":"r1"}}}`))
	case "runs/update":
		var req map[string]any
		json.NewDecoder(r.Body).Decode(&req)
		f.mu.Lock()
		f.updates = append(f.updates, req)
		f.mu.Unlock()
		w.Write([]byte(`{}`))
	case "runs/log-batch":
		if f.block != nil {
			if f.blocked != nil {
				select {
				case f.blocked <- struct{}{}:
				default:
				}
			}
			<-f.block
		}
		var b logBatch
		json.NewDecoder(r.Body).Decode(&b)
		f.mu.Lock()
		f.batches = append(f.batches, b)
		f.mu.Unlock()
		w.Write([]byte(`{}`))
	default:
		w.WriteHeader(404)
	}
}

func TestNoTrackingURI(t *testing.T) {
	t.Setenv("MLFLOW_TRACKING_URI", "")
	_, err := New("exp", "", nil)
	if !errors.Is(err, ErrNoTrackingServer) || !strings.Contains(err.Error(), "mlflow server --backend-store-uri sqlite:///mlflow.db --host 127.0.0.1 --port 5000") || !strings.Contains(err.Error(), "MLFLOW_TRACKING_URI") {
		t.Fatalf("err = %v", err)
	}
	t.Setenv("MLFLOW_TRACKING_URI", "sqlite:///mlflow.db")
	if _, err := New("exp", "", nil); !errors.Is(err, ErrNoTrackingServer) {
		t.Fatalf("sqlite URI: err = %v", err)
	}
	if Available() == nil {
		t.Error("Available with a sqlite URI")
	}
}

func TestEnvOverrides(t *testing.T) {
	t.Setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:1")
	t.Setenv("MLFLOW_EXPERIMENT_NAME", "from-env")
	t.Setenv("MLFLOW_RUN_ID", "abc")
	t.Setenv("MLFLOW_TAGS", `{"k": "v"}`)
	t.Setenv("MLFLOW_NESTED_RUN", "yes")
	tr, err := New("arg", "", map[string]any{"run_id": "xyz", "tags": `{"a": "b"}`, "nested_run": false, "parent_run_id": "p"})
	if err != nil {
		t.Fatal(err)
	}
	o := tr.opts
	if o.ExperimentName != "from-env" || o.RunID != "abc" || o.Tags["k"] != "v" || o.Tags["a"] != "" || o.ParentRunID != "p" {
		t.Errorf("opts = %+v", o)
	}
	t.Setenv("MLFLOW_NESTED_RUN", "maybe")
	if _, err := New("arg", "", nil); err == nil {
		t.Error("bad MLFLOW_NESTED_RUN accepted")
	}
}

func TestBatchLimitsAndArtifactLocation(t *testing.T) {
	f := &fakeServer{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	tr, err := Open(Options{TrackingURI: srv.URL, ExperimentName: "e", ArtifactLocation: "/tmp/logs"})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{}
	for i := 0; i < 250; i++ {
		cfg[fmt.Sprintf("p%03d", i)] = i
	}
	if err := tr.StoreInitConfiguration(cfg); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2345; i++ {
		tr.Log(map[string]any{"m": i, "bad key!": 1, strings.Repeat("k", 251): 1}, i, nil)
	}
	if err := tr.Finish(); err != nil {
		t.Fatal(err)
	}
	if f.created["artifact_location"] != "/tmp/logs" || f.created["name"] != "e" {
		t.Errorf("experiments/create = %v", f.created)
	}
	metrics, params := 0, 0
	for _, b := range f.batches {
		if len(b.Metrics) > MaxMetricsPerBatch || len(b.Params) > MaxParamsPerBatch || len(b.Tags) > MaxTagsPerBatch || len(b.Metrics)+len(b.Params)+len(b.Tags) > MaxItemsPerBatch || b.RunID != "r1" {
			t.Fatalf("batch over the limits: %d metrics %d params %d tags run %q", len(b.Metrics), len(b.Params), len(b.Tags), b.RunID)
		}
		metrics += len(b.Metrics)
		params += len(b.Params)
	}
	if metrics != 2345 || params != 250 {
		t.Errorf("delivered %d metrics and %d params, want 2345 and 250", metrics, params)
	}
	if len(f.updates) != 1 || f.updates[0]["status"] != "FINISHED" {
		t.Errorf("runs/update = %v", f.updates)
	}
}

// TestLogNeverWaits holds log-batch requests until the test ends: Log must
// return all the same (a Log that waited for the server would never return).
func TestLogNeverWaits(t *testing.T) {
	f := &fakeServer{block: make(chan struct{}), blocked: make(chan struct{}, 1)}
	srv := httptest.NewServer(f)
	defer srv.Close()
	defer close(f.block)
	log, _ := logtest.NewNullLogger()
	tr, err := Open(Options{TrackingURI: srv.URL, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	logged := make(chan error, 1)
	go func() {
		for i := 0; i < 20000; i++ {
			if err := tr.Log(map[string]any{"a": 1.0, "b": 2.0}, i, nil); err != nil {
				logged <- err
				return
			}
			if i == 10 {
				<-f.blocked // the sender waits in log-batch from now on
			}
		}
		logged <- nil
	}()
	select {
	case err := <-logged:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(patience):
		t.Fatal("Log waited for the stalled server")
	}
}

func TestValidKey(t *testing.T) {
	for k, want := range map[string]bool{"loss": true, "train/loss": true, "a b:c-d.e_f": true, "ümlaut": true,
		"": false, "/a": false, "a/": false, "a//b": false, "../a": false, "a!": false, strings.Repeat("x", 251): false} {
		if validKey(k) != want {
			t.Errorf("validKey(%q) = %v", k, !want)
		}
	}
}

func TestJSONFloat(t *testing.T) {
	b, _ := json.Marshal([]jsonFloat{1.5, jsonFloat(math.NaN()), jsonFloat(math.Inf(1)), jsonFloat(math.Inf(-1))})
	if string(b) != `[1.5,"NaN","Infinity","-Infinity"]` {
		t.Errorf("%s", b)
	}
}
