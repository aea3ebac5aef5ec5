// Package mlflow is goaccel's MLflow tracker: a client of the MLflow
// tracking server's REST API (/api/2.0/mlflow/) that mirrors Accelerate's
// MLflowTracker.
//
// The experiment is found by name or created (with the logging directory as
// its artifact location); the run is created, or resumed by id. The
// environment variables MLFLOW_EXPERIMENT_NAME, MLFLOW_RUN_ID, MLFLOW_TAGS
// (a JSON object) and MLFLOW_NESTED_RUN override the arguments, as in
// Accelerate; MLFLOW_TRACKING_URI gives the server unless the
// "tracking_uri" kwarg does (like mlflow.set_tracking_uri), and
// MLFLOW_TRACKING_TOKEN / MLFLOW_TRACKING_USERNAME+PASSWORD authenticate.
//
// Log never waits for the network: values are queued and sent by a
// background goroutine (owned by the Tracker, stopped by Finish) at least
// every 500 ms, in runs/log-batch requests within MLflow's limits (1000
// metrics, 100 params, 100 tags, 1000 items per request). When the server
// cannot be reached the values stay queued and are resent (with backoff) on
// the next flush and at Finish: an accepted value is never dropped because
// the server was down. Flush and Finish retry with backoff, then return an
// error that says how many values are still queued.
//
// Value rules: numbers are metrics; a map of numbers logs key/member
// metrics; other values are skipped with a warning naming the key. Param
// values longer than 6000 characters are truncated to 6000 with a warning
// naming the key (MLflow rejects longer ones); keys longer than 250
// characters, or that MLflow would reject, are skipped with a warning.
// Params are immutable in MLflow: logging a different value for a key
// already logged is skipped with a warning.
//
// MLflow ≥ 3.7 defaults to a local sqlite store when no tracking URI is set,
// which only MLflow's Python code can write; New then fails with an error
// that says how to start a server.
//
// The package does not import package tracking; *Tracker has
// tracking.GeneralTracker's method set.
package mlflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/goaccel/goaccel/tracking/values"
)

// Name is the tracker's LoggerType name.
const Name = "mlflow"

// MLflow's limits.
const (
	MaxMetricsPerBatch = 1000
	MaxParamsPerBatch  = 100
	MaxTagsPerBatch    = 100
	MaxItemsPerBatch   = 1000
	MaxParamValueLen   = 6000
	MaxTagValueLen     = 8000
	MaxKeyLen          = 250
	maxBatchBytes      = 900 << 10 // under the 1 MB request limit
)

// DefaultFlushInterval is how often queued values are sent.
const DefaultFlushInterval = 500 * time.Millisecond

// Run statuses for FinishWithStatus.
const (
	StatusFinished = "FINISHED"
	StatusFailed   = "FAILED"
	StatusKilled   = "KILLED"
)

// Options configure a Tracker. Environment overrides are applied by New, not
// by Open.
type Options struct {
	// TrackingURI is the server, http:// or https://.
	TrackingURI string
	// ExperimentName is the experiment to log to (created when missing);
	// empty means MLflow's "Default" experiment.
	ExperimentName string
	// ArtifactLocation is used when the experiment is created.
	ArtifactLocation string
	// RunID resumes an existing run instead of creating one.
	RunID string
	// RunName names a new run.
	RunName string
	// Description is stored as the run's note (tag mlflow.note.content).
	Description string
	// Tags are set on the run.
	Tags map[string]string
	// ParentRunID makes the run a child of another (tag mlflow.parentRunId).
	ParentRunID string
	// FlushInterval ≤ 0 or above DefaultFlushInterval means DefaultFlushInterval.
	FlushInterval time.Duration
	// Attempts is how many times Start and Flush try a request (default 4).
	Attempts int
	// Backoff is the wait between attempts (default 250 ms doubling to 4 s).
	Backoff Backoff
	// FinishTimeout bounds how long Finish keeps retrying (default 30 s).
	FinishTimeout time.Duration
	// RequestTimeout bounds one HTTP request (default 10 s).
	RequestTimeout time.Duration
	// HTTPClient, when set, sends the requests.
	HTTPClient *http.Client
	// Logger receives warnings; nil means logrus.StandardLogger().
	Logger logrus.FieldLogger
}

// ErrNoTrackingServer is returned (wrapped) when no http(s) tracking URI is
// configured.
var ErrNoTrackingServer = errors.New("no MLflow tracking server is configured")

const serverHint = "MLflow's default local store (sqlite:///mlflow.db, or ./mlruns) can only be written by MLflow's own Python code; " +
	"start a tracking server with `mlflow server --backend-store-uri sqlite:///mlflow.db --host 127.0.0.1 --port 5000` " +
	"and set MLFLOW_TRACKING_URI=http://127.0.0.1:5000 (or pass init kwarg tracking_uri)"

// checkURI validates a tracking URI.
func checkURI(uri string) error {
	if uri == "" {
		return fmt.Errorf("mlflow: %w (MLFLOW_TRACKING_URI is not set): %s", ErrNoTrackingServer, serverHint)
	}
	u, err := url.Parse(uri)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("mlflow: %w: the tracking URI %q is not an http(s) server address: %s", ErrNoTrackingServer, uri, serverHint)
	}
	return nil
}

// Available reports whether an http(s) MLflow server is configured through
// MLFLOW_TRACKING_URI (what "all" needs to include mlflow).
func Available() error { return checkURI(os.Getenv("MLFLOW_TRACKING_URI")) }

// strToBool is Accelerate's str_to_bool.
func strToBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "y", "yes", "t", "true", "on", "1":
		return true, nil
	case "n", "no", "f", "false", "off", "0":
		return false, nil
	}
	return false, fmt.Errorf("invalid truth value %q", s)
}

// New is the registry constructor. runName is the experiment name
// (Accelerate passes the project name as experiment_name) and loggingDir the
// artifact location of a new experiment. initKwargs keys honoured:
// "experiment_name", "logging_dir", "run_id", "tags" (map or JSON string),
// "nested_run" (bool), "parent_run_id", "run_name", "description",
// "tracking_uri", "logger"; others are reported with a warning. Then
// MLFLOW_EXPERIMENT_NAME, MLFLOW_RUN_ID, MLFLOW_TAGS and MLFLOW_NESTED_RUN
// override them.
func New(runName, loggingDir string, initKwargs map[string]any) (*Tracker, error) {
	opts := Options{ExperimentName: runName, ArtifactLocation: loggingDir, Logger: values.LoggerFromKwargs(initKwargs), TrackingURI: os.Getenv("MLFLOW_TRACKING_URI")}
	nested := false
	var tagsArg any
	var unknown []string
	str := func(k string, v any) (string, error) {
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("mlflow: init kwarg %s must be a string, got %v (%T)", k, v, v)
		}
		return s, nil
	}
	for k, v := range initKwargs {
		var err error
		switch k {
		case "logger":
		case "experiment_name":
			opts.ExperimentName, err = str(k, v)
		case "logging_dir":
			opts.ArtifactLocation, err = str(k, v)
		case "run_id":
			opts.RunID, err = str(k, v)
		case "run_name":
			opts.RunName, err = str(k, v)
		case "description":
			opts.Description, err = str(k, v)
		case "parent_run_id":
			opts.ParentRunID, err = str(k, v)
		case "tracking_uri":
			opts.TrackingURI, err = str(k, v)
		case "tags":
			tagsArg = v
		case "nested_run":
			b, ok := v.(bool)
			if !ok {
				err = fmt.Errorf("mlflow: init kwarg nested_run must be a bool, got %v (%T)", v, v)
			}
			nested = b
		default:
			unknown = append(unknown, k)
		}
		if err != nil {
			return nil, err
		}
	}
	// Environment overrides, as Accelerate's MLflowTracker.
	if v := os.Getenv("MLFLOW_EXPERIMENT_NAME"); v != "" {
		opts.ExperimentName = v
	}
	if v := os.Getenv("MLFLOW_RUN_ID"); v != "" {
		opts.RunID = v
	}
	if v, ok := os.LookupEnv("MLFLOW_TAGS"); ok && v != "" {
		tagsArg = v
	}
	if v := os.Getenv("MLFLOW_NESTED_RUN"); v != "" {
		b, err := strToBool(v)
		if err != nil {
			return nil, fmt.Errorf("mlflow: MLFLOW_NESTED_RUN: %w", err)
		}
		nested = b
	}
	tags, err := parseTags(tagsArg)
	if err != nil {
		return nil, err
	}
	opts.Tags = tags
	if !nested {
		opts.ParentRunID = ""
	} else if opts.ParentRunID == "" {
		opts.ParentRunID = os.Getenv("MLFLOW_PARENT_RUN_ID")
	}
	t, err := Open(opts)
	if err != nil {
		return nil, err
	}
	if nested && opts.ParentRunID == "" {
		t.warn.Warnf("nested_run is set but there is no parent run (Go has no active MLflow run): pass init kwarg parent_run_id or set MLFLOW_PARENT_RUN_ID; the run is created at top level")
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		t.warn.Warnf("ignoring unsupported init kwargs %q", unknown)
	}
	return t, nil
}

// parseTags accepts a map (values printed with fmt) or a JSON object string.
func parseTags(v any) (map[string]string, error) {
	out := map[string]string{}
	switch x := v.(type) {
	case nil:
	case string:
		var m map[string]any
		if err := json.Unmarshal([]byte(x), &m); err != nil {
			return nil, fmt.Errorf("mlflow: tags (MLFLOW_TAGS or the tags kwarg) must be a JSON object: %w", err)
		}
		for k, e := range m {
			out[k] = stringify(e)
		}
	case map[string]string:
		for k, e := range x {
			out[k] = e
		}
	case map[string]any:
		for k, e := range x {
			out[k] = stringify(e)
		}
	default:
		return nil, fmt.Errorf("mlflow: tags must be a map or a JSON object string, got %T", v)
	}
	return out, nil
}

// stringify renders a param or tag value: strings as-is, numbers in
// shortest form, other values as JSON (fmt when not encodable).
func stringify(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return "None"
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	case bool:
		return strconv.FormatBool(x)
	}
	if values.Classify(v) == values.Scalar {
		return fmt.Sprint(v)
	}
	if b, err := json.Marshal(v); err == nil {
		return string(b)
	}
	return fmt.Sprint(v)
}

// Tracker is the "mlflow" tracker.
type Tracker struct {
	opts Options
	warn *values.Warner
	c    *client

	mu        sync.Mutex // guards the queue and the state below
	metrics   []metric
	params    []keyValue
	tags      []keyValue
	sentParam map[string]string // params queued or sent, for immutability
	started   bool
	finished  bool
	runID     string
	expID     string
	autoStep  int64
	lastErr   error // last delivery failure, cleared by a success
	outage    bool  // a delivery failure was reported and not yet recovered
	hugeWarn  bool

	sendMu  sync.Mutex // one sender at a time; it owns the queue's front
	kick    chan struct{}
	stopc   chan struct{}
	done    chan struct{}
	retryAt time.Time     // background: no attempt before this (backoff)
	backoff time.Duration // background: current backoff
}

// Open returns a Tracker for opts (no environment lookups); nothing is sent
// until Start.
func Open(opts Options) (*Tracker, error) {
	if err := checkURI(opts.TrackingURI); err != nil {
		return nil, err
	}
	if opts.FlushInterval <= 0 || opts.FlushInterval > DefaultFlushInterval {
		opts.FlushInterval = DefaultFlushInterval
	}
	if opts.Attempts <= 0 {
		opts.Attempts = 4
	}
	if opts.Backoff.Initial <= 0 {
		opts.Backoff.Initial = 250 * time.Millisecond
	}
	if opts.Backoff.Max < opts.Backoff.Initial {
		opts.Backoff.Max = max(4*time.Second, opts.Backoff.Initial)
	}
	if opts.FinishTimeout <= 0 {
		opts.FinishTimeout = 30 * time.Second
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = 10 * time.Second
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: opts.RequestTimeout}
	}
	c := &client{base: strings.TrimRight(opts.TrackingURI, "/"), http: hc,
		token: os.Getenv("MLFLOW_TRACKING_TOKEN"), user: os.Getenv("MLFLOW_TRACKING_USERNAME"), pass: os.Getenv("MLFLOW_TRACKING_PASSWORD")}
	return &Tracker{opts: opts, warn: values.NewWarner(Name, opts.Logger), c: c, sentParam: map[string]string{}}, nil
}

// Name returns "mlflow".
func (t *Tracker) Name() string { return Name }

// RequiresLoggingDirectory returns false (as Accelerate's).
func (t *Tracker) RequiresLoggingDirectory() bool { return false }

// MainProcessOnly returns true.
func (t *Tracker) MainProcessOnly() bool { return true }

// Tracker returns the *Tracker itself.
func (t *Tracker) Tracker() any { return t }

// RunID is the run's id (empty before Start).
func (t *Tracker) RunID() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.runID
}

// ExperimentID is the experiment's id (empty before Start).
func (t *Tracker) ExperimentID() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.expID
}

// TrackingURI is the server's address.
func (t *Tracker) TrackingURI() string { return t.c.base }

func (t *Tracker) retry(ctx context.Context, f func(context.Context) error) error {
	attempts := t.opts.Attempts
	if _, ok := ctx.Deadline(); ok {
		attempts = 1 << 30 // bounded by the deadline instead
	}
	n, err := withRetry(ctx, attempts, t.opts.Backoff, f)
	if err != nil && retryable(err) {
		return fmt.Errorf("%w (after %d attempts; is `mlflow server` running at %s?)", err, n, t.c.base)
	}
	return err
}

// Start finds or creates the experiment and creates (or resumes) the run,
// retrying with backoff while the server is unreachable, then starts the
// background sender.
func (t *Tracker) Start() error {
	t.mu.Lock()
	started := t.started
	t.mu.Unlock()
	if started {
		return nil
	}
	ctx := context.Background()
	var runID, expID string
	if t.opts.RunID != "" {
		var got struct {
			Run struct {
				Info struct {
					RunID        string `json:"run_id"`
					ExperimentID string `json:"experiment_id"`
				} `json:"info"`
			} `json:"run"`
		}
		err := t.retry(ctx, func(ctx context.Context) error {
			return t.c.call(ctx, http.MethodGet, "runs/get", url.Values{"run_id": {t.opts.RunID}}, &got)
		})
		if err != nil {
			return fmt.Errorf("mlflow: resuming run %s: %w", t.opts.RunID, err)
		}
		runID, expID = got.Run.Info.RunID, got.Run.Info.ExperimentID
		err = t.retry(ctx, func(ctx context.Context) error {
			return t.c.call(ctx, http.MethodPost, "runs/update", map[string]any{"run_id": runID, "status": "RUNNING"}, nil)
		})
		if err != nil {
			return fmt.Errorf("mlflow: marking run %s as running: %w", runID, err)
		}
	} else {
		var err error
		if expID, err = t.experiment(ctx); err != nil {
			return err
		}
		if runID, err = t.createRun(ctx, expID); err != nil {
			return err
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.runID, t.expID, t.started = runID, expID, true
	if t.opts.RunID != "" { // a resumed run: set the tags like a new one
		for k, v := range t.runTags() {
			t.tags = append(t.tags, keyValue{k, v})
		}
	}
	t.kick = make(chan struct{}, 1)
	t.stopc, t.done = make(chan struct{}), make(chan struct{})
	go t.sendLoop()
	return nil
}

// experiment returns the id of the named experiment, creating it if needed.
func (t *Tracker) experiment(ctx context.Context) (string, error) {
	name := t.opts.ExperimentName
	if name == "" {
		name = "Default"
	}
	var got struct {
		Experiment struct {
			ID    string `json:"experiment_id"`
			Stage string `json:"lifecycle_stage"`
		} `json:"experiment"`
	}
	get := func(ctx context.Context) error {
		return t.c.call(ctx, http.MethodGet, "experiments/get-by-name", url.Values{"experiment_name": {name}}, &got)
	}
	err := t.retry(ctx, get)
	var api *APIError
	if errors.As(err, &api) && api.Code == "RESOURCE_DOES_NOT_EXIST" {
		req := map[string]any{"name": name}
		if loc := t.opts.ArtifactLocation; loc != "" {
			if !strings.Contains(loc, "://") {
				if abs, aerr := filepath.Abs(loc); aerr == nil {
					loc = abs
				}
			}
			req["artifact_location"] = loc
		}
		var created struct {
			ID string `json:"experiment_id"`
		}
		err = t.retry(ctx, func(ctx context.Context) error {
			return t.c.call(ctx, http.MethodPost, "experiments/create", req, &created)
		})
		if errors.As(err, &api) && api.Code == "RESOURCE_ALREADY_EXISTS" { // created meanwhile
			err = t.retry(ctx, get)
		} else if err == nil {
			return created.ID, nil
		}
	}
	if err != nil {
		return "", fmt.Errorf("mlflow: getting experiment %q: %w", name, err)
	}
	if got.Experiment.Stage == "deleted" {
		return "", fmt.Errorf("mlflow: experiment %q is deleted: restore it (mlflow experiments restore --experiment-id %s) or use another name", name, got.Experiment.ID)
	}
	return got.Experiment.ID, nil
}

// runTags are the tags a run starts with.
func (t *Tracker) runTags() map[string]string {
	tags := map[string]string{"mlflow.source.name": "goaccel", "mlflow.source.type": "LOCAL"}
	if u, err := user.Current(); err == nil {
		tags["mlflow.user"] = u.Username
	}
	if t.opts.RunName != "" {
		tags["mlflow.runName"] = t.opts.RunName
	}
	if t.opts.Description != "" {
		tags["mlflow.note.content"] = t.opts.Description
	}
	if t.opts.ParentRunID != "" {
		tags["mlflow.parentRunId"] = t.opts.ParentRunID
	}
	for k, v := range t.opts.Tags {
		tags[k] = v
	}
	return tags
}

func (t *Tracker) createRun(ctx context.Context, expID string) (string, error) {
	tags := t.runTags()
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var list []keyValue
	for _, k := range keys {
		if kv, ok := t.checkKV("tag", k, tags[k], MaxTagValueLen); ok {
			list = append(list, kv)
		}
	}
	req := map[string]any{"experiment_id": expID, "start_time": time.Now().UnixMilli(), "tags": list}
	if t.opts.RunName != "" {
		req["run_name"] = t.opts.RunName
	}
	var got struct {
		Run struct {
			Info struct {
				RunID string `json:"run_id"`
			} `json:"info"`
		} `json:"run"`
	}
	if err := t.retry(ctx, func(ctx context.Context) error {
		return t.c.call(ctx, http.MethodPost, "runs/create", req, &got)
	}); err != nil {
		return "", fmt.Errorf("mlflow: creating a run in experiment %s: %w", expID, err)
	}
	return got.Run.Info.RunID, nil
}

// validKey is MLflow's name rule: alphanumerics, underscores, periods,
// dashes, spaces, colons and slashes, not path-like (no empty, "." or ".."
// elements, no leading slash).
var validKeyRE = regexp.MustCompile(`^[\p{L}\p{N}_./\- :]+$`)

func validKey(k string) bool {
	if len(k) > MaxKeyLen || !validKeyRE.MatchString(k) || strings.HasPrefix(k, "/") || strings.HasSuffix(k, "/") {
		return false
	}
	for _, el := range strings.Split(k, "/") {
		if el == "" || el == "." || el == ".." {
			return false
		}
	}
	return true
}

// checkKV validates a param or tag, truncating long values with a warning.
func (t *Tracker) checkKV(what, k, v string, maxLen int) (keyValue, bool) {
	if !validKey(k) {
		t.warn.Unsupported(k, v, fmt.Sprintf("%s keys of at most %d characters made of letters, digits, _ . - space : and /, not path-like", what, MaxKeyLen))
		return keyValue{}, false
	}
	if n := len([]rune(v)); n > maxLen {
		t.warn.Warnf("%s %q is %d characters long; MLflow accepts at most %d, so it is truncated to %d", what, k, n, maxLen, maxLen)
		v = string([]rune(v)[:maxLen])
	}
	return keyValue{k, v}, true
}

func (t *Tracker) ready() error {
	if !t.started {
		return errors.New("mlflow: the tracker is not started (call Start first)")
	}
	if t.finished {
		return errors.New("mlflow: the tracker is finished")
	}
	return nil
}

// StoreInitConfiguration queues config as run params (nested maps flattened
// with "/") and sends them now. On a delivery error the params stay queued
// and are resent later; the error says so.
func (t *Tracker) StoreInitConfiguration(config map[string]any) error {
	flat := map[string]any{}
	flatten("", config, flat)
	keys := make([]string, 0, len(flat))
	for k := range flat {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	t.mu.Lock()
	if err := t.ready(); err != nil {
		t.mu.Unlock()
		return err
	}
	for _, k := range keys {
		kv, ok := t.checkKV("param", k, stringify(flat[k]), MaxParamValueLen)
		if !ok {
			continue
		}
		if old, seen := t.sentParam[k]; seen {
			if old != kv.Value {
				t.warn.Warnf("param %q was already logged as %q; MLflow params cannot change, so the new value %q is not recorded", k, old, kv.Value)
			}
			continue
		}
		t.sentParam[k] = kv.Value
		t.params = append(t.params, kv)
	}
	t.mu.Unlock()
	return t.Flush()
}

func flatten(prefix string, m map[string]any, out map[string]any) {
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
			flatten(prefix+k+"/", sub, out)
			continue
		}
		out[prefix+k] = v
	}
}

// SetTags queues run tags (sent in the background like metrics).
func (t *Tracker) SetTags(tags map[string]any) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.ready(); err != nil {
		return err
	}
	for k, v := range tags {
		if kv, ok := t.checkKV("tag", k, stringify(v), MaxTagValueLen); ok {
			t.tags = append(t.tags, kv)
		}
	}
	t.signal()
	return nil
}

func (t *Tracker) signal() {
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// Log queues numbers (and key/member for maps of numbers) as metrics at
// step; with NoStep the step is this tracker's count of step-less calls.
// It never waits for the network.
func (t *Tracker) Log(vals map[string]any, step int, kwargs map[string]any) error {
	ts := time.Now().UnixMilli()
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.ready(); err != nil {
		return err
	}
	st := int64(step)
	if step == values.NoStep {
		st = t.autoStep
		t.autoStep++
	}
	for k, v := range vals {
		if f, ok := values.Float(v); ok {
			t.addMetric(k, f, ts, st)
			continue
		}
		if values.Classify(v) == values.Group {
			entries, _ := values.GroupEntries(v)
			for _, e := range entries {
				t.addMetric(k+"/"+e.Key, e.Value, ts, st)
			}
			continue
		}
		t.warn.Unsupported(k, v, "numbers and maps of numbers as metrics")
	}
	if len(t.metrics) >= MaxMetricsPerBatch {
		t.signal()
	}
	if len(t.metrics) > 1_000_000 && !t.hugeWarn {
		t.hugeWarn = true
		t.warn.Warnf("%d metrics are queued for %s (the server is unreachable or slow); they are kept in memory until delivered", len(t.metrics), t.c.base)
	}
	return nil
}

// addMetric queues one metric; callers hold t.mu.
func (t *Tracker) addMetric(k string, f float64, ts, step int64) {
	if !validKey(k) {
		t.warn.Unsupported(k, f, fmt.Sprintf("metric names of at most %d characters made of letters, digits, _ . - space : and /, not path-like", MaxKeyLen))
		return
	}
	t.metrics = append(t.metrics, metric{Key: k, Value: jsonFloat(f), Timestamp: ts, Step: step})
}

// Pending returns how many metrics, params and tags are queued.
func (t *Tracker) Pending() (metrics, params, tags int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.metrics), len(t.params), len(t.tags)
}

func (t *Tracker) sendLoop() {
	defer close(t.done)
	tk := time.NewTicker(t.opts.FlushInterval)
	defer tk.Stop()
	for {
		select {
		case <-t.stopc:
			return
		case <-tk.C:
		case <-t.kick:
		}
		if time.Now().Before(t.retryAt) {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), t.opts.RequestTimeout)
		err := t.send(ctx)
		cancel()
		if err != nil && retryable(err) {
			t.backoff = t.opts.Backoff.next(t.backoff)
			t.retryAt = time.Now().Add(t.backoff)
		} else {
			t.backoff, t.retryAt = 0, time.Time{}
		}
	}
}

// send delivers everything queued, one batch after another, and reports the
// first failure (queued values stay queued). Outages are reported once, and
// their end too.
func (t *Tracker) send(ctx context.Context) error {
	t.sendMu.Lock()
	defer t.sendMu.Unlock()
	for {
		t.mu.Lock()
		b, nm, np, nt := t.nextBatch()
		runID := t.runID
		t.mu.Unlock()
		if nm+np+nt == 0 {
			t.noteResult(nil)
			return nil
		}
		b.RunID = runID
		err := t.c.call(ctx, http.MethodPost, "runs/log-batch", b, nil)
		if err != nil && !retryable(err) && np > 0 && nm+nt == 0 && np > 1 {
			// One bad param must not sink the others: send them one by one.
			err = t.sendParamsOneByOne(ctx, runID, b.Params)
		}
		if err != nil && retryable(err) {
			t.noteResult(err)
			return err
		}
		t.mu.Lock()
		t.metrics = t.metrics[nm:]
		t.params = t.params[np:]
		t.tags = t.tags[nt:]
		t.mu.Unlock()
		if err != nil { // rejected by the server: cannot be delivered
			t.warn.Warnf("the server rejected %d metrics, %d params and %d tags, which are dropped: %v", nm, np, nt, err)
			t.noteResult(nil)
			return err
		}
	}
}

func (t *Tracker) sendParamsOneByOne(ctx context.Context, runID string, params []keyValue) error {
	var errs []error
	for _, p := range params {
		err := t.c.call(ctx, http.MethodPost, "runs/log-batch", logBatch{RunID: runID, Params: []keyValue{p}}, nil)
		if err != nil && retryable(err) {
			return err
		}
		if err != nil {
			t.warn.Warnf("the server rejected param %q = %q: %v", p.Key, p.Value, err)
			errs = append(errs, fmt.Errorf("param %q: %w", p.Key, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("mlflow: %d params rejected: %w", len(errs), errors.Join(errs...))
	}
	return nil
}

// noteResult tracks outages for the warnings.
func (t *Tracker) noteResult(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		t.lastErr = err
		if !t.outage {
			t.outage = true
			t.warn.Warnf("cannot deliver values to %s (%v); %d metrics, %d params and %d tags are kept and will be resent", t.c.base, err, len(t.metrics), len(t.params), len(t.tags))
		}
		return
	}
	if t.outage {
		t.outage = false
		t.warn.Logger().Infof("%s: delivery to %s works again; queued values were sent", Name, t.c.base)
	}
	t.lastErr = nil
}

// nextBatch picks the front of the queue within MLflow's limits: params and
// tags in batches of their own, metrics in batches of their own. Callers
// hold t.mu.
func (t *Tracker) nextBatch() (logBatch, int, int, int) {
	if len(t.params) > 0 {
		n, size := 0, 0
		for n < len(t.params) && n < MaxParamsPerBatch {
			size += len(t.params[n].Key) + len(t.params[n].Value) + 32
			if n > 0 && size > maxBatchBytes {
				break
			}
			n++
		}
		return logBatch{Params: append([]keyValue(nil), t.params[:n]...)}, 0, n, 0
	}
	if len(t.tags) > 0 {
		n, size := 0, 0
		for n < len(t.tags) && n < MaxTagsPerBatch {
			size += len(t.tags[n].Key) + len(t.tags[n].Value) + 32
			if n > 0 && size > maxBatchBytes {
				break
			}
			n++
		}
		return logBatch{Tags: append([]keyValue(nil), t.tags[:n]...)}, 0, 0, n
	}
	n := min(len(t.metrics), MaxMetricsPerBatch, MaxItemsPerBatch)
	return logBatch{Metrics: append([]metric(nil), t.metrics[:n]...)}, n, 0, 0
}

// Flush sends everything queued now, retrying with backoff; on failure the
// values stay queued and the error says how many.
func (t *Tracker) Flush() error {
	t.mu.Lock()
	err := t.ready()
	t.mu.Unlock()
	if err != nil {
		return err
	}
	return t.flushRetry(context.Background(), t.opts.Attempts)
}

func (t *Tracker) flushRetry(ctx context.Context, attempts int) error {
	_, err := withRetry(ctx, attempts, t.opts.Backoff, func(ctx context.Context) error {
		rctx, cancel := context.WithTimeout(ctx, t.opts.RequestTimeout)
		defer cancel()
		return t.send(rctx)
	})
	if err != nil && retryable(err) {
		nm, np, nt := t.Pending()
		return &undeliveredError{metrics: nm, params: np, tags: nt, uri: t.c.base, err: err}
	}
	return err
}

// undeliveredError says that queued values could not be sent.
type undeliveredError struct {
	metrics, params, tags int
	uri                   string
	err                   error
	final                 bool
}

func (e *undeliveredError) Error() string {
	what := "they are kept and will be resent on the next flush or at Finish"
	if e.final {
		what = "the tracker is finished, so they are lost"
	}
	return fmt.Sprintf("mlflow: could not deliver %d metrics, %d params and %d tags to %s: %v; %s (is `mlflow server` running at %s?)",
		e.metrics, e.params, e.tags, e.uri, e.err, what, e.uri)
}

func (e *undeliveredError) Unwrap() error { return e.err }

// Finish sends everything queued (retrying with backoff for up to
// Options.FinishTimeout) and marks the run FINISHED.
func (t *Tracker) Finish() error { return t.FinishWithStatus(StatusFinished) }

// FinishWithStatus is Finish with status FINISHED, FAILED or KILLED. After
// it the tracker accepts no values; if delivery failed, the error says what
// was lost and the run is left RUNNING on the server.
func (t *Tracker) FinishWithStatus(status string) error {
	switch status {
	case StatusFinished, StatusFailed, StatusKilled:
	default:
		return fmt.Errorf("mlflow: run status %q is not FINISHED, FAILED or KILLED", status)
	}
	t.mu.Lock()
	if !t.started || t.finished {
		t.mu.Unlock()
		return nil
	}
	t.finished = true
	runID := t.runID
	t.mu.Unlock()
	close(t.stopc)
	<-t.done
	ctx, cancel := context.WithTimeout(context.Background(), t.opts.FinishTimeout)
	defer cancel()
	ferr := t.flushRetry(ctx, 1<<30)
	var u *undeliveredError
	if errors.As(ferr, &u) {
		u.final = true
		return fmt.Errorf("%w; run %s stays RUNNING on the server", ferr, runID)
	}
	err := t.retry(ctx, func(ctx context.Context) error {
		return t.c.call(ctx, http.MethodPost, "runs/update", map[string]any{"run_id": runID, "status": status, "end_time": time.Now().UnixMilli()}, nil)
	})
	if err != nil {
		err = fmt.Errorf("mlflow: marking run %s %s: %w", runID, status, err)
	}
	return errors.Join(ferr, err)
}
