package wandb

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/goaccel/goaccel/tracking/values"
	"github.com/sirupsen/logrus"
)

// Modes of a run, as in WANDB_MODE.
const (
	ModeOffline  = "offline"
	ModeOnline   = "online"
	ModeDisabled = "disabled"
)

// flushInterval bounds how long logged data may sit in memory; a pending
// history row older than pendingMaxAge is committed by the flusher.
const (
	flushInterval = time.Second
	pendingMaxAge = 500 * time.Millisecond
)

// Tracker writes one W&B run as an offline transaction log.
type Tracker struct {
	runName    string
	loggingDir string

	project, entity, displayName, group, jobType, notes string
	tags                                                []string
	runID                                               string
	mode                                                string
	dirOverride                                         string

	// syncCommand runs `wandb sync` for online mode; tests replace it.
	syncCommand func(ctx context.Context, runDir string) error

	mu       sync.Mutex
	started  bool
	finished bool
	file     *os.File
	buf      *bufio.Writer
	log      *logWriter
	runDir   string
	num      int64
	start    time.Time
	nextStep int64
	pending  *pendingRow
	writeErr error

	stop chan struct{}
	done chan struct{}
}

type pendingRow struct {
	step    int64
	items   map[string]item // by joined path
	order   []string
	created time.Time
}

// New prepares a tracker; it creates no files (Start does). Recognised
// initKwargs (wandb.init's names): project (default runName, as Accelerate
// passes project=run_name), entity, name, group, job_type, notes, tags, id,
// mode ("offline", "online", "disabled"), dir.
func New(runName, loggingDir string, initKwargs map[string]any) (*Tracker, error) {
	t := &Tracker{runName: runName, loggingDir: loggingDir, project: runName}
	str := func(key string, dst *string) error {
		v, ok := initKwargs[key]
		if !ok || v == nil {
			return nil
		}
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("wandb: init kwarg %q must be a string, got %T", key, v)
		}
		*dst = s
		return nil
	}
	for key, dst := range map[string]*string{
		"project": &t.project, "entity": &t.entity, "name": &t.displayName,
		"group": &t.group, "job_type": &t.jobType, "notes": &t.notes,
		"id": &t.runID, "mode": &t.mode, "dir": &t.dirOverride,
	} {
		if err := str(key, dst); err != nil {
			return nil, err
		}
	}
	tags, err := values.StringList(initKwargs["tags"])
	if err != nil {
		return nil, fmt.Errorf("wandb: init kwarg \"tags\" %v", err)
	}
	t.tags = append(t.tags, tags...)
	for key := range initKwargs {
		switch key {
		case "project", "entity", "name", "group", "job_type", "notes", "id", "mode", "dir", "tags":
		default:
			logrus.Warnf("wandb: init kwarg %q is not supported by the Go writer and is ignored", key)
		}
	}
	if t.project == "" {
		t.project = os.Getenv("WANDB_PROJECT")
	}
	if t.entity == "" {
		t.entity = os.Getenv("WANDB_ENTITY")
	}
	if t.runID == "" {
		t.runID = os.Getenv("WANDB_RUN_ID")
	}
	if t.mode == "" {
		t.mode = os.Getenv("WANDB_MODE")
	}
	switch t.mode {
	case "", "offline", "dryrun":
		t.mode = ModeOffline
	case "online", "run":
		t.mode = ModeOnline
	case "disabled":
		t.mode = ModeDisabled
	default:
		return nil, fmt.Errorf("wandb: unknown mode %q (want offline, online or disabled)", t.mode)
	}
	if t.runID == "" {
		id, err := newRunID()
		if err != nil {
			return nil, err
		}
		t.runID = id
	}
	if strings.ContainsAny(t.runID, `/\:`) {
		return nil, fmt.Errorf("wandb: run id %q must not contain path separators or ':'", t.runID)
	}
	t.syncCommand = runWandbSync
	return t, nil
}

func newRunID() (string, error) {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("wandb: generating a run id: %w", err)
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b[:]), nil
}

// Name is the LoggerType name.
func (t *Tracker) Name() string { return "wandb" }

// RequiresLoggingDirectory is false, as for Accelerate's WandBTracker.
func (t *Tracker) RequiresLoggingDirectory() bool { return false }

// MainProcessOnly is false, as for Accelerate's WandBTracker.
func (t *Tracker) MainProcessOnly() bool { return false }

// Tracker returns the tracker itself (RunDir and RunID describe the run).
func (t *Tracker) Tracker() any { return t }

// RunID is the run's id (the <id> of offline-run-…-<id>).
func (t *Tracker) RunID() string { return t.runID }

// Mode is "offline", "online" or "disabled".
func (t *Tracker) Mode() string { return t.mode }

// RunDir is the offline run directory; empty before Start or when disabled.
func (t *Tracker) RunDir() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.runDir
}

// baseDir is where the "wandb" directory goes: the dir init kwarg, else
// loggingDir, else WANDB_DIR, else the working directory.
func (t *Tracker) baseDir() string {
	for _, d := range []string{t.dirOverride, t.loggingDir, os.Getenv("WANDB_DIR")} {
		if d != "" {
			return d
		}
	}
	return "."
}

// Start creates wandb/offline-run-YYYYMMDD_HHMMSS-<id>/run-<id>.wandb and
// writes the header and run records.
func (t *Tracker) Start() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.started {
		return fmt.Errorf("wandb: run %s already started", t.runID)
	}
	if t.mode == ModeDisabled {
		t.started = true
		return nil
	}
	t.start = time.Now()
	wandbDir := filepath.Join(t.baseDir(), "wandb")
	runDir := filepath.Join(wandbDir, fmt.Sprintf("offline-run-%s-%s", t.start.Format("20060102_150405"), t.runID))
	if err := os.MkdirAll(filepath.Join(runDir, "files"), 0o755); err != nil {
		return fmt.Errorf("wandb: creating the run directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(runDir, "run-"+t.runID+".wandb"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("wandb: creating the transaction log: %w", err)
	}
	// Point wandb/latest-run at this run, as wandb does (best effort).
	latest := filepath.Join(wandbDir, "latest-run")
	if fi, err := os.Lstat(latest); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		_ = os.Remove(latest)
	}
	_ = os.Symlink(filepath.Base(runDir), latest)

	t.file, t.runDir = f, runDir
	t.buf = bufio.NewWriterSize(f, 64*1024)
	t.log = newLogWriter(t.buf)
	host, _ := os.Hostname()
	err = t.log.writeHeader()
	if err == nil {
		err = t.writeLocked(headerRecord(t.nextNum(), t.runID, "goaccel"))
	}
	if err == nil {
		err = t.writeLocked(runRecord(t.nextNum(), runInfo{
			id: t.runID, entity: t.entity, project: t.project, group: t.group,
			jobType: t.jobType, displayName: t.displayName, notes: t.notes,
			host: host, tags: t.tags, start: t.start,
			config: []item{{path: []string{"_wandb"}, valueJSON: "{}"}},
		}))
	}
	if err == nil {
		err = t.buf.Flush()
	}
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("wandb: starting run %s: %w", t.runID, err)
	}
	t.started = true
	t.stop, t.done = make(chan struct{}), make(chan struct{})
	go t.flusher()
	return nil
}

func (t *Tracker) nextNum() int64 { t.num++; return t.num }

func (t *Tracker) writeLocked(rec []byte) error {
	if t.writeErr != nil {
		return t.writeErr
	}
	if err := t.log.writeRecord(rec); err != nil {
		t.writeErr = err
		return err
	}
	return nil
}

// flusher is owned by the Tracker: it runs from Start until Finish closes
// stop, and pushes buffered records to the file every flushInterval.
func (t *Tracker) flusher() {
	defer close(t.done)
	tick := time.NewTicker(flushInterval / 2)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case now := <-tick.C:
			t.mu.Lock()
			if t.pending != nil && now.Sub(t.pending.created) >= pendingMaxAge {
				if err := t.commitLocked(); err != nil {
					logrus.Errorf("wandb: committing a history row: %v", err)
				}
			}
			if t.buf != nil && t.writeErr == nil {
				if err := t.buf.Flush(); err != nil {
					t.writeErr = fmt.Errorf("wandb: flushing the transaction log: %w", err)
					logrus.Error(t.writeErr)
				}
			}
			t.mu.Unlock()
		}
	}
}

func (t *Tracker) checkOpen(op string) error {
	if !t.started {
		return fmt.Errorf("wandb: %s before Start", op)
	}
	if t.finished {
		return fmt.Errorf("wandb: %s after Finish", op)
	}
	return nil
}

// StoreInitConfiguration writes a config record (wandb.config.update with
// allow_val_change). Values that cannot be JSON-encoded are skipped with a
// warning naming the key.
func (t *Tracker) StoreInitConfiguration(vals map[string]any) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.checkOpen("StoreInitConfiguration"); err != nil {
		return err
	}
	if t.mode == ModeDisabled || len(vals) == 0 {
		return nil
	}
	var items []item
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		js, err := configJSON(vals[k])
		if err != nil {
			logrus.Warnf("wandb: config value %q (%T) cannot be stored: %v", k, vals[k], err)
			continue
		}
		items = append(items, item{path: []string{k}, valueJSON: js})
	}
	if len(items) == 0 {
		return nil
	}
	if err := t.writeLocked(configRecord(t.nextNum(), t.runID, items)); err != nil {
		return fmt.Errorf("wandb: writing the config: %w", err)
	}
	return nil
}

// Log adds values to the history row at step, like run.log(values,
// step=step). Numbers become scalars, strings text, and a map of numbers a
// group of nested keys (shown as "outer.inner"); other values are skipped
// with a warning. Rows are committed when a later step arrives, when step is
// NoStep (the row is committed at once, then the step advances), or by the
// flusher once they are half a second old. A step lower than the last
// committed one is rejected with a warning, as wandb does.
func (t *Tracker) Log(vals map[string]any, step int, kwargs map[string]any) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.checkOpen("Log"); err != nil {
		return err
	}
	if t.mode == ModeDisabled {
		return nil
	}
	_, commit, ok, err := t.rowLocked(step, kwargs, slices.Sorted(maps.Keys(vals)))
	if err != nil || !ok {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		for _, it := range t.itemsFor(k, vals[k]) {
			t.pending.put(it)
		}
	}
	if commit {
		return t.commitLocked()
	}
	return nil
}

// rowLocked applies run.log's step rules for a call logging keys at step
// (NoStep: the current step) with kwargs (only "commit" is understood): it
// commits the pending row when the step moves on and makes sure a pending
// row exists at the returned step. ok is false, after a warning, when the
// step is lower than the current one (wandb drops such values); commit
// tells the caller to commit the row once its items are added.
func (t *Tracker) rowLocked(step int, kwargs map[string]any, keys []string) (s int64, commit, ok bool, err error) {
	commit = step < 0
	for k, v := range kwargs {
		if c, isBool := v.(bool); isBool && k == "commit" {
			commit = c
			continue
		}
		logrus.Warnf("wandb: log kwarg %q is not supported by the Go writer and is ignored", k)
	}
	s = int64(step)
	if step < 0 {
		s = t.nextStep
		if t.pending != nil {
			s = t.pending.step
		}
	}
	current := t.nextStep
	if t.pending != nil {
		current = t.pending.step
	}
	if s < current {
		logrus.Warnf("wandb: step %d is lower than the current step %d; values %v not logged (wandb requires increasing steps)", s, current, keys)
		return s, false, false, nil
	}
	if t.pending != nil && t.pending.step != s {
		if err := t.commitLocked(); err != nil {
			return s, false, false, err
		}
	}
	if t.pending == nil {
		t.pending = &pendingRow{step: s, items: map[string]item{}, created: time.Now()}
	}
	return s, commit, true, nil
}

func (p *pendingRow) put(it item) {
	key := strings.Join(it.path, "\x00")
	if _, ok := p.items[key]; !ok {
		p.order = append(p.order, key)
	}
	p.items[key] = it
}

// itemsFor turns one logged value into history items, warning about what
// cannot be represented.
func (t *Tracker) itemsFor(k string, v any) []item {
	if js, ok := values.NumberJSON(v, values.PythonLiterals); ok {
		return []item{{path: []string{k}, valueJSON: js}}
	}
	if s, ok := v.(string); ok {
		b, _ := json.Marshal(s)
		return []item{{path: []string{k}, valueJSON: string(b)}}
	}
	if nums, bad, ok := values.NumberMap(v); ok {
		for _, b := range bad {
			logrus.Warnf("wandb: value %q/%q is not a number; not logged", k, b)
		}
		var items []item
		for _, ik := range slices.Sorted(maps.Keys(nums)) {
			js, _ := values.NumberJSON(nums[ik], values.PythonLiterals)
			items = append(items, item{path: []string{k, ik}, valueJSON: js})
		}
		return items
	}
	logrus.Warnf("wandb: value %q has type %T, which the wandb tracker cannot log; not logged", k, v)
	return nil
}

// commitLocked writes the pending row as a history record (with _step,
// _runtime and _timestamp, as wandb's handler adds) and a summary record.
func (t *Tracker) commitLocked() error {
	p := t.pending
	if p == nil {
		return nil
	}
	t.pending = nil
	if p.step >= t.nextStep {
		t.nextStep = p.step + 1
	}
	if len(p.items) == 0 {
		return nil
	}
	now := time.Now()
	items := make([]item, 0, len(p.items)+3)
	for _, k := range p.order {
		items = append(items, p.items[k])
	}
	runtime, _ := values.NumberJSON(now.Sub(t.start).Seconds(), values.PythonLiterals)
	ts, _ := values.NumberJSON(float64(now.UnixNano())/1e9, values.PythonLiterals)
	items = append(items,
		item{path: []string{"_step"}, valueJSON: fmt.Sprint(p.step)},
		item{path: []string{"_runtime"}, valueJSON: runtime},
		item{path: []string{"_timestamp"}, valueJSON: ts},
	)
	if err := t.writeLocked(historyRecord(t.nextNum(), t.runID, p.step, items)); err != nil {
		return fmt.Errorf("wandb: writing history step %d: %w", p.step, err)
	}
	if err := t.writeLocked(summaryRecord(t.nextNum(), t.runID, items)); err != nil {
		return fmt.Errorf("wandb: writing the summary: %w", err)
	}
	return nil
}

// Finish commits the last row, writes the exit record, syncs and closes the
// file. In online mode it then uploads the run with `wandb sync` when the
// wandb CLI is on PATH, and otherwise logs the command to run.
func (t *Tracker) Finish() error {
	t.mu.Lock()
	if !t.started || t.finished {
		t.mu.Unlock()
		return nil
	}
	t.finished = true
	if t.mode == ModeDisabled {
		t.mu.Unlock()
		return nil
	}
	t.mu.Unlock()
	close(t.stop)
	<-t.done

	t.mu.Lock()
	errs := []error{t.commitLocked()}
	runtime := int32(time.Since(t.start).Seconds())
	errs = append(errs, t.writeLocked(exitRecord(t.nextNum(), t.runID, 0, runtime)))
	if err := t.buf.Flush(); err != nil {
		errs = append(errs, fmt.Errorf("wandb: flushing the transaction log: %w", err))
	}
	if err := t.file.Sync(); err != nil {
		errs = append(errs, fmt.Errorf("wandb: syncing the transaction log: %w", err))
	}
	if err := t.file.Close(); err != nil {
		errs = append(errs, fmt.Errorf("wandb: closing the transaction log: %w", err))
	}
	runDir := t.runDir
	t.mu.Unlock()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if t.mode == ModeOnline {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		return t.syncCommand(ctx, runDir)
	}
	return nil
}

// runWandbSync uploads a finished offline run with the wandb CLI.
func runWandbSync(ctx context.Context, runDir string) error {
	exe, err := exec.LookPath("wandb")
	if err != nil {
		logrus.Warnf("wandb: WANDB_MODE=online but the wandb CLI is not on PATH; the run is saved offline. Upload it with: pip install wandb && wandb sync %s", runDir)
		return nil
	}
	cmd := exec.CommandContext(ctx, exe, "sync", runDir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("wandb: `wandb sync %s` failed: %w\n%s", runDir, err, out)
	}
	logrus.Infof("wandb: synced %s\n%s", runDir, out)
	return nil
}

// configJSON encodes a configuration value; NaN and infinities become the
// literals Python writes.
func configJSON(v any) (string, error) {
	if s, ok := values.NumberJSON(v, values.PythonLiterals); ok {
		return s, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return string(b), nil
}
