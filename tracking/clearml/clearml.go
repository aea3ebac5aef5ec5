package clearml

import (
	"archive/zip"
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/goaccel/goaccel/tracking/values"
	"github.com/sirupsen/logrus"
)

// singleValueIter is the iteration ClearML's report_single_value uses
// (the "Summary" table).
const singleValueIter = math.MinInt32

const (
	taskFile      = "task.json"
	metricsFile   = "metrics.jsonl"
	logFile       = "log.jsonl"
	flushInterval = time.Second
)

// Tracker records one ClearML task as an offline session.
type Tracker struct {
	runName, loggingDir string
	project, taskName   string
	cacheDir            string
	taskID              string

	mu       sync.Mutex
	started  bool
	finished bool
	folder   string
	task     map[string]any
	metrics  *os.File
	metricsW *bufio.Writer
	logs     *os.File
	logsW    *bufio.Writer
	host     string
	err      error

	imageCounts map[string]int // debug samples per title/series

	stop chan struct{}
	done chan struct{}
}

// New prepares a task; it creates no files (Start does). The project is the
// project_name init kwarg, else $CLEARML_PROJECT, else runName; the task
// name is task_name, else $CLEARML_TASK, else runName (as Accelerate's
// ClearMLTracker). The session goes under <cache>/offline/<task id>/, with
// cache the cache_dir init kwarg, else $CLEARML_CACHE_DIR, else the logging
// directory, else ~/.clearml/cache.
func New(runName, loggingDir string, initKwargs map[string]any) (*Tracker, error) {
	t := &Tracker{runName: runName, loggingDir: loggingDir}
	get := func(key, env string) (string, error) {
		if v, ok := initKwargs[key]; ok && v != nil {
			s, ok := v.(string)
			if !ok {
				return "", fmt.Errorf("clearml: init kwarg %q must be a string, got %T", key, v)
			}
			return s, nil
		}
		if env != "" {
			return os.Getenv(env), nil
		}
		return "", nil
	}
	var err error
	if t.project, err = get("project_name", "CLEARML_PROJECT"); err != nil {
		return nil, err
	}
	if t.taskName, err = get("task_name", "CLEARML_TASK"); err != nil {
		return nil, err
	}
	if t.cacheDir, err = get("cache_dir", "CLEARML_CACHE_DIR"); err != nil {
		return nil, err
	}
	for k := range initKwargs {
		switch k {
		case "project_name", "task_name", "cache_dir":
		default:
			logrus.Warnf("clearml: init kwarg %q is not supported by the Go writer and is ignored", k)
		}
	}
	if t.project == "" {
		t.project = runName
	}
	if t.taskName == "" {
		t.taskName = runName
	}
	if t.project == "" || t.taskName == "" {
		return nil, fmt.Errorf("clearml: a project and task name are needed (run name, CLEARML_PROJECT/CLEARML_TASK or init kwargs)")
	}
	if t.cacheDir == "" {
		t.cacheDir = loggingDir
	}
	if t.cacheDir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("clearml: no cache directory: %w", err)
		}
		t.cacheDir = filepath.Join(home, ".clearml", "cache")
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("clearml: generating a task id: %w", err)
	}
	t.taskID = "offline-" + hex.EncodeToString(b[:])
	return t, nil
}

// Name is the LoggerType name.
func (t *Tracker) Name() string { return "clearml" }

// RequiresLoggingDirectory is false, as for Accelerate's ClearMLTracker.
func (t *Tracker) RequiresLoggingDirectory() bool { return false }

// MainProcessOnly is true, as for Accelerate's ClearMLTracker.
func (t *Tracker) MainProcessOnly() bool { return true }

// Tracker returns the tracker itself (TaskID, SessionFolder, SessionZip).
func (t *Tracker) Tracker() any { return t }

// TaskID is the offline task id ("offline-" + 32 hex digits).
func (t *Tracker) TaskID() string { return t.taskID }

// SessionFolder is <cache>/offline/<task id>.
func (t *Tracker) SessionFolder() string {
	return filepath.Join(t.cacheDir, "offline", t.taskID)
}

// SessionZip is the archive Finish writes, <cache>/offline/<task id>.zip.
func (t *Tracker) SessionZip() string { return t.SessionFolder() + ".zip" }

// Start creates the session folder with task.json, metrics.jsonl and
// log.jsonl.
func (t *Tracker) Start() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.started {
		return fmt.Errorf("clearml: task %s already started", t.taskID)
	}
	t.folder = t.SessionFolder()
	if err := os.MkdirAll(filepath.Join(t.folder, "data"), 0o755); err != nil {
		return fmt.Errorf("clearml: creating the offline session folder: %w", err)
	}
	t.host, _ = os.Hostname()
	// The fields Task.export_task produces for an offline task and that
	// Task.import_task passes on to tasks.edit.
	t.task = map[string]any{
		"id": t.taskID, "name": t.taskName, "project_name": t.project, "type": "training",
		"configuration": map[string]any{}, "hyperparams": map[string]any{},
		"execution":      map[string]any{"artifacts": []any{}, "docker_cmd": "", "model": "", "model_desc": map[string]any{}, "model_labels": map[string]any{}, "parameters": map[string]any{}},
		"output":         map[string]any{},
		"offline_folder": t.folder, "offline_output_models": []any{},
	}
	if err := t.writeTaskLocked(); err != nil {
		return err
	}
	var err error
	if t.metrics, err = os.Create(filepath.Join(t.folder, metricsFile)); err != nil {
		return fmt.Errorf("clearml: creating %s: %w", metricsFile, err)
	}
	if t.logs, err = os.Create(filepath.Join(t.folder, logFile)); err != nil {
		t.metrics.Close()
		return fmt.Errorf("clearml: creating %s: %w", logFile, err)
	}
	t.metricsW, t.logsW = bufio.NewWriter(t.metrics), bufio.NewWriter(t.logs)
	t.started = true
	t.stop, t.done = make(chan struct{}), make(chan struct{})
	go t.flusher()
	return nil
}

// writeTaskLocked rewrites task.json atomically.
func (t *Tracker) writeTaskLocked() error {
	b, err := json.Marshal(t.task)
	if err != nil {
		return fmt.Errorf("clearml: encoding %s: %w", taskFile, err)
	}
	tmp := filepath.Join(t.folder, "."+taskFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("clearml: writing %s: %w", taskFile, err)
	}
	if err := os.Rename(tmp, filepath.Join(t.folder, taskFile)); err != nil {
		return fmt.Errorf("clearml: writing %s: %w", taskFile, err)
	}
	return nil
}

// flusher is owned by the Tracker: it runs from Start until Finish closes
// stop, writing buffered events out every half second.
func (t *Tracker) flusher() {
	defer close(t.done)
	tick := time.NewTicker(flushInterval / 2)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-tick.C:
			t.mu.Lock()
			if err := t.flushLocked(); err != nil {
				logrus.Errorf("clearml: %v", err)
			}
			t.mu.Unlock()
		}
	}
}

func (t *Tracker) flushLocked() error {
	if t.err != nil {
		return t.err
	}
	if err := errors.Join(t.metricsW.Flush(), t.logsW.Flush()); err != nil {
		t.err = fmt.Errorf("clearml: writing the offline session: %w", err)
	}
	return t.err
}

func (t *Tracker) checkOpen(op string) error {
	if !t.started {
		return fmt.Errorf("clearml: %s before Start", op)
	}
	if t.finished {
		return fmt.Errorf("clearml: %s after Finish", op)
	}
	return nil
}

// StoreInitConfiguration stores values as the task's "General"
// configuration object (Task.connect_configuration's default section), a
// "dictionary" whose text is JSON, which ClearML's HOCON parser reads.
// Values JSON cannot encode are skipped with a warning naming the key.
func (t *Tracker) StoreInitConfiguration(vals map[string]any) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.checkOpen("StoreInitConfiguration"); err != nil {
		return err
	}
	clean := values.JSONEncodable(vals, "clearml: configuration value")
	text, err := json.MarshalIndent(clean, "", "  ")
	if err != nil {
		return fmt.Errorf("clearml: encoding the configuration: %w", err)
	}
	t.task["configuration"].(map[string]any)["General"] = map[string]any{
		"name": "General", "type": "dictionary", "value": string(text),
	}
	return t.writeTaskLocked()
}

// titleSeries applies Accelerate's rule: an eval_/test_/train_ prefix
// becomes the series and is stripped from the title; otherwise the series
// is "train".
func titleSeries(name string) (string, string) {
	for _, p := range []string{"eval", "test", "train"} {
		if strings.HasPrefix(name, p+"_") {
			return name[len(p)+1:], p
		}
	}
	return name, "train"
}

// Log reports numbers as scalars: with a step, title and series follow
// Accelerate's eval_/test_/train_ prefix rule (report_scalar); without one
// they become single values (report_single_value: title "Summary"). A map
// of numbers reports title <key>, one series per inner key (single values
// "<key>/<inner>" without a step). Strings go to the console log as
// "<key>: <value>". Anything else is skipped with a warning naming the key.
func (t *Tracker) Log(vals map[string]any, step int, kwargs map[string]any) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.checkOpen("Log"); err != nil {
		return err
	}
	for k := range kwargs {
		logrus.Warnf("clearml: log kwarg %q is not supported by the Go writer and is ignored", k)
	}
	ts := time.Now().UnixMilli()
	var scalars []map[string]any
	var logs []map[string]any
	scalar := func(title, series string, iter int64, v any) {
		f, _, _ := values.Number(v)
		var value any = f
		if math.IsNaN(f) || math.IsInf(f, 0) {
			value = nil // JSON has no NaN; ClearML's server stores null
			logrus.Warnf("clearml: value %s/%s is %v; stored as null", title, series, f)
		}
		scalars = append(scalars, map[string]any{
			"timestamp": ts, "type": "training_stats_scalar", "task": t.taskID,
			"iter": iter, "metric": title, "variant": series, "value": value,
		})
	}
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		v := vals[k]
		if _, _, ok := values.Number(v); ok {
			if step < 0 {
				scalar("Summary", k, singleValueIter, v)
			} else {
				title, series := titleSeries(k)
				scalar(title, series, int64(step), v)
			}
			continue
		}
		if s, ok := v.(string); ok {
			logs = append(logs, map[string]any{
				"timestamp": ts, "type": "log", "task": t.taskID, "level": "info",
				"worker": t.host, "msg": k + ": " + s,
			})
			continue
		}
		if nums, bad, ok := values.NumberMap(v); ok {
			for _, b := range bad {
				logrus.Warnf("clearml: value %q/%q is not a number; not logged", k, b)
			}
			for _, ik := range slices.Sorted(maps.Keys(nums)) {
				if step < 0 {
					scalar("Summary", k+"/"+ik, singleValueIter, nums[ik])
				} else {
					scalar(k, ik, int64(step), nums[ik])
				}
			}
			continue
		}
		logrus.Warnf("clearml: value %q has type %T, which the clearml tracker cannot log; not logged", k, v)
	}
	if err := t.appendLine(t.metricsW, scalars); err != nil {
		return err
	}
	return t.appendLine(t.logsW, logs)
}

// appendLine writes one events.add_batch request: a JSON array of events.
func (t *Tracker) appendLine(w *bufio.Writer, events []map[string]any) error {
	if len(events) == 0 {
		return nil
	}
	if t.err != nil {
		return t.err
	}
	b, err := json.Marshal(events)
	if err != nil {
		return fmt.Errorf("clearml: encoding events: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		t.err = fmt.Errorf("clearml: writing the offline session: %w", err)
		return t.err
	}
	return nil
}

// Finish flushes and closes the session files and zips the folder into
// <cache>/offline/<task id>.zip, as ClearML does when an offline task
// closes. Task.import_offline_session accepts either.
func (t *Tracker) Finish() error {
	t.mu.Lock()
	if !t.started || t.finished {
		t.mu.Unlock()
		return nil
	}
	t.finished = true
	t.mu.Unlock()
	close(t.stop)
	<-t.done
	t.mu.Lock()
	defer t.mu.Unlock()
	errs := []error{t.flushLocked(), t.metrics.Close(), t.logs.Close()}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("clearml: closing the offline session %s: %w", t.folder, err)
	}
	if err := zipFolder(t.folder, t.folder+".zip"); err != nil {
		return fmt.Errorf("clearml: zipping the offline session (the folder %s is complete): %w", t.folder, err)
	}
	logrus.Infof("clearml: offline session stored in %s; upload it with Task.import_offline_session(%q)", t.folder+".zip", t.folder+".zip")
	return nil
}

// zipFolder packs the files under folder (paths relative to it).
func zipFolder(folder, dst string) error {
	tmp := dst + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	zw := zip.NewWriter(f)
	walkErr := filepath.Walk(folder, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, err := filepath.Rel(folder, path)
		if err != nil {
			return err
		}
		w, err := zw.Create(filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		src, err := os.Open(path)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(w, src)
		return err
	})
	if err := errors.Join(walkErr, zw.Close(), f.Close()); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}
