package cometml

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/goaccel/goaccel/tracking/values"
	"github.com/sirupsen/logrus"
)

// DefaultOfflineDir is comet_ml's default offline directory.
const DefaultOfflineDir = ".cometml-runs"

// flushInterval bounds how long logged data stays only in memory.
const flushInterval = time.Second

// event is one logged item, shared by the offline archive and the REST
// sender: a metric, a parameter or an "other" value.
type event struct {
	kind  string          // "metric", "param", "other", "image"
	name  string          // metric/parameter name, other key or image name
	value json.RawMessage // JSON-encoded value
	step  *int64          // metrics and images; nil when no step was given
	ts    int64           // local timestamp, milliseconds

	// images only
	png      []byte
	imageID  string         // 32 hex digits, as comet_ml's generate_guid
	counter  int            // the experiment's figure counter
	metadata map[string]any // image metadata (the caption), never nil
}

type sink interface {
	start(t *Tracker) error
	send(ev event) error
	finish(t *Tracker) error
}

// Tracker records one Comet experiment, offline (an archive comet_ml
// uploads with `comet upload`) or online (Comet's REST API v2).
type Tracker struct {
	runName, loggingDir string

	project, workspace, experimentName string
	tags                               []string
	key                                string
	online                             bool
	apiKey, restBase                   string
	offlineDir                         string
	client                             *http.Client

	mu       sync.Mutex
	started  bool
	finished bool
	start    time.Time
	sink     sink
	figures  int // images logged so far (comet_ml's figure_counter)
}

var keyPattern = regexp.MustCompile(`^[a-zA-Z0-9]{32,50}$`)

// New prepares an experiment; it creates no files and opens no connection
// (Start does). Recognised initKwargs: project_name (default runName, as
// Accelerate passes project_name=run_name), workspace, experiment_name,
// experiment_key, tags, online (bool), api_key, offline_directory.
// Environment: COMET_API_KEY (online when set, unless online=false),
// COMET_PROJECT_NAME, COMET_WORKSPACE, COMET_OFFLINE_DIRECTORY,
// COMET_URL_OVERRIDE (server root, default https://www.comet.com/clientlib/).
func New(runName, loggingDir string, initKwargs map[string]any) (*Tracker, error) {
	t := &Tracker{runName: runName, loggingDir: loggingDir, project: runName}
	for _, kv := range []struct {
		key string
		dst *string
	}{
		{"project_name", &t.project}, {"workspace", &t.workspace},
		{"experiment_name", &t.experimentName}, {"experiment_key", &t.key},
		{"api_key", &t.apiKey}, {"offline_directory", &t.offlineDir},
	} {
		if v, ok := initKwargs[kv.key]; ok && v != nil {
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("comet_ml: init kwarg %q must be a string, got %T", kv.key, v)
			}
			*kv.dst = s
		}
	}
	tags, err := values.StringList(initKwargs["tags"])
	if err != nil {
		return nil, fmt.Errorf("comet_ml: init kwarg \"tags\" %v", err)
	}
	t.tags = append(t.tags, tags...)
	for k := range initKwargs {
		switch k {
		case "project_name", "workspace", "experiment_name", "experiment_key", "api_key", "offline_directory", "tags", "online":
		default:
			logrus.Warnf("comet_ml: init kwarg %q is not supported by the Go client and is ignored", k)
		}
	}
	if t.project == "" {
		t.project = os.Getenv("COMET_PROJECT_NAME")
	}
	if t.workspace == "" {
		t.workspace = os.Getenv("COMET_WORKSPACE")
	}
	if t.apiKey == "" {
		t.apiKey = os.Getenv("COMET_API_KEY")
	}
	t.online = t.apiKey != ""
	if v, ok := initKwargs["online"]; ok && v != nil {
		b, ok := v.(bool)
		if !ok {
			return nil, fmt.Errorf("comet_ml: init kwarg \"online\" must be a bool, got %T", v)
		}
		if b && t.apiKey == "" {
			return nil, fmt.Errorf("comet_ml: online=true needs an API key (COMET_API_KEY or the api_key init kwarg)")
		}
		t.online = b
	}
	if t.offlineDir == "" {
		t.offlineDir = os.Getenv("COMET_OFFLINE_DIRECTORY")
	}
	if t.offlineDir == "" {
		t.offlineDir = loggingDir
	}
	if t.offlineDir == "" {
		t.offlineDir = DefaultOfflineDir
	}
	root := os.Getenv("COMET_URL_OVERRIDE")
	if root == "" {
		root = "https://www.comet.com/clientlib/"
	}
	root = strings.TrimSuffix(strings.TrimSuffix(root, "/"), "/clientlib")
	t.restBase = root + "/api/rest/v2/"
	if t.key == "" {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("comet_ml: generating an experiment key: %w", err)
		}
		t.key = hex.EncodeToString(b[:])
	} else if !keyPattern.MatchString(t.key) {
		return nil, fmt.Errorf("comet_ml: experiment_key %q must be 32 to 50 letters or digits", t.key)
	}
	t.client = &http.Client{Timeout: 30 * time.Second}
	return t, nil
}

// Name is the LoggerType name.
func (t *Tracker) Name() string { return "comet_ml" }

// RequiresLoggingDirectory is false, as for Accelerate's CometMLTracker.
func (t *Tracker) RequiresLoggingDirectory() bool { return false }

// MainProcessOnly is true, as for Accelerate's CometMLTracker.
func (t *Tracker) MainProcessOnly() bool { return true }

// Tracker returns the tracker itself (ExperimentKey, ArchivePath describe it).
func (t *Tracker) Tracker() any { return t }

// Online reports whether the experiment goes to Comet's REST API.
func (t *Tracker) Online() bool { return t.online }

// ExperimentKey is the offline id, or the key the server assigned online.
func (t *Tracker) ExperimentKey() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.key
}

// ArchivePath is where the offline archive is (or will be) written.
func (t *Tracker) ArchivePath() string {
	return archivePath(t.offlineDir, t.key)
}

// Start opens the offline archive, or creates the experiment online.
func (t *Tracker) Start() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.started {
		return fmt.Errorf("comet_ml: experiment already started")
	}
	t.start = time.Now()
	if t.online {
		t.sink = &restSink{}
	} else {
		t.sink = &archiveSink{}
	}
	if err := t.sink.start(t); err != nil {
		return err
	}
	t.started = true
	if t.experimentName != "" {
		return t.sendLocked(event{kind: "other", name: "Name", value: mustJSON(t.experimentName), ts: nowMillis()})
	}
	return nil
}

func (t *Tracker) checkOpen(op string) error {
	if !t.started {
		return fmt.Errorf("comet_ml: %s before Start", op)
	}
	if t.finished {
		return fmt.Errorf("comet_ml: %s after Finish", op)
	}
	return nil
}

func (t *Tracker) sendLocked(ev event) error { return t.sink.send(ev) }

// StoreInitConfiguration logs each value as a parameter (log_parameters):
// nested maps are flattened with "|" as comet_ml does; values other than
// numbers, strings, booleans and null are stored as their JSON text.
func (t *Tracker) StoreInitConfiguration(vals map[string]any) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.checkOpen("StoreInitConfiguration"); err != nil {
		return err
	}
	flat := map[string]any{}
	nested := flatten("", vals, flat)
	ts := nowMillis()
	if nested {
		if err := t.sendLocked(event{kind: "other", name: "hasNestedParams", value: json.RawMessage("true"), ts: ts}); err != nil {
			return err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(flat)) {
		v, err := paramJSON(flat[k])
		if err != nil {
			logrus.Warnf("comet_ml: parameter %q (%T) cannot be stored: %v", k, flat[k], err)
			continue
		}
		if err := t.sendLocked(event{kind: "param", name: k, value: v, ts: ts}); err != nil {
			return err
		}
	}
	return nil
}

func flatten(prefix string, m map[string]any, out map[string]any) (nested bool) {
	for k, v := range m {
		name := k
		if prefix != "" {
			name = prefix + "|" + k
		}
		if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
			flatten(name, sub, out)
			nested = true
			continue
		}
		out[name] = v
	}
	return nested
}

func paramJSON(v any) (json.RawMessage, error) {
	if s, ok := values.NumberJSON(v, values.QuotedStrings); ok {
		return json.RawMessage(s), nil
	}
	switch x := v.(type) {
	case nil, string, bool:
		return mustJSON(x), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return mustJSON(string(b)), nil // comet stores such values as text
}

// Log records values at step: numbers are metrics, strings "other" values,
// and a map of numbers becomes metrics named "<key>/<inner key>" (Accelerate
// drops the outer key; keeping it avoids collisions). Other values are
// skipped with a warning naming the key. step NoStep (-1) leaves the
// metric's step empty.
func (t *Tracker) Log(vals map[string]any, step int, kwargs map[string]any) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.checkOpen("Log"); err != nil {
		return err
	}
	for k := range kwargs {
		logrus.Warnf("comet_ml: log kwarg %q is not supported by the Go client and is ignored", k)
	}
	var sp *int64
	if step >= 0 {
		s := int64(step)
		sp = &s
	}
	ts := nowMillis()
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		v := vals[k]
		if js, ok := values.NumberJSON(v, values.QuotedStrings); ok {
			if err := t.sendLocked(event{kind: "metric", name: k, value: json.RawMessage(js), step: sp, ts: ts}); err != nil {
				return err
			}
			continue
		}
		if s, ok := v.(string); ok {
			if err := t.sendLocked(event{kind: "other", name: k, value: mustJSON(s), ts: ts}); err != nil {
				return err
			}
			continue
		}
		if nums, bad, ok := values.NumberMap(v); ok {
			for _, b := range bad {
				logrus.Warnf("comet_ml: value %q/%q is not a number; not logged", k, b)
			}
			for _, ik := range slices.Sorted(maps.Keys(nums)) {
				js, _ := values.NumberJSON(nums[ik], values.QuotedStrings)
				if err := t.sendLocked(event{kind: "metric", name: k + "/" + ik, value: json.RawMessage(js), step: sp, ts: ts}); err != nil {
					return err
				}
			}
			continue
		}
		logrus.Warnf("comet_ml: value %q has type %T, which the comet_ml tracker cannot log; not logged", k, v)
	}
	return nil
}

// Finish closes the archive (offline) or drains the REST queue and records
// the experiment's start and end times (online).
func (t *Tracker) Finish() error {
	t.mu.Lock()
	if !t.started || t.finished {
		t.mu.Unlock()
		return nil
	}
	t.finished = true
	t.mu.Unlock()
	return t.sink.finish(t)
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

func nowMillis() int64 { return time.Now().UnixMilli() }
