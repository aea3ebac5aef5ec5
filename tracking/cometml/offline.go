package cometml

import (
	"archive/zip"
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// Names comet_ml's OfflineSender reads inside the archive.
const (
	experimentFile = "experiment.json"
	messagesFile   = "messages.json"
)

func archivePath(dir, key string) string { return filepath.Join(dir, key+".zip") }

func stagingPath(dir, key string) string { return filepath.Join(dir, key+".staging") }

// archiveSink writes messages.json (one {"type","payload"} JSON object per
// line) into a staging directory and packs it with experiment.json into
// <offline_dir>/<key>.zip, every second while something changed and at
// Finish.
type archiveSink struct {
	mu        sync.Mutex // guards everything below; taken after Tracker.mu
	dir       string
	staging   string
	key       string
	meta      experimentMeta
	messages  *os.File
	buf       *bufio.Writer
	messageID int64
	dirty     bool
	err       error
	nextZip   time.Time
	files     []string // image files in staging, packed into the archive too

	stop chan struct{}
	done chan struct{}
}

// experimentMeta is experiment.json, the fields comet_ml's
// offline-experiment schema requires plus those its writer adds.
type experimentMeta struct {
	OfflineID                 string   `json:"offline_id"`
	ProjectName               *string  `json:"project_name"`
	StartTime                 int64    `json:"start_time"`
	StopTime                  int64    `json:"stop_time"`
	Tags                      []string `json:"tags"`
	Workspace                 *string  `json:"workspace"`
	ResumeStrategy            string   `json:"resume_strategy"`
	CustomerErrorReported     bool     `json:"customer_error_reported"`
	CustomerErrorMessage      *string  `json:"customer_error_message"`
	UserProvidedExperimentKey bool     `json:"user_provided_experiment_key"`
	CometStartSourced         bool     `json:"comet_start_sourced"`
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (a *archiveSink) start(t *Tracker) error {
	a.dir, a.key = t.offlineDir, t.key
	a.staging = stagingPath(a.dir, a.key)
	tags := append([]string{}, t.tags...)
	a.meta = experimentMeta{
		OfflineID: a.key, ProjectName: strPtr(t.project), StartTime: t.start.UnixMilli(),
		StopTime: t.start.UnixMilli(), Tags: tags, Workspace: strPtr(t.workspace),
		ResumeStrategy: "create",
	}
	if err := os.MkdirAll(a.staging, 0o700); err != nil {
		return fmt.Errorf("comet_ml: creating the offline directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(a.staging, messagesFile), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("comet_ml: creating %s: %w", messagesFile, err)
	}
	a.messages, a.buf = f, bufio.NewWriter(f)
	// comet_ml marks offline experiments with this "other" value.
	if err := a.send(event{kind: "other", name: "offline_experiment", value: json.RawMessage("true")}); err != nil {
		return err
	}
	if err := a.flush(true); err != nil {
		return err
	}
	a.stop, a.done = make(chan struct{}), make(chan struct{})
	go a.flusher()
	return nil
}

// line renders one messages.json line in the shapes comet_ml's offline
// writer uses (and its JSON schemas validate).
func line(ev event, id int64) ([]byte, error) {
	var typ string
	var payload any
	switch ev.kind {
	case "metric":
		typ = "metric_msg"
		payload = map[string]any{
			"local_timestamp": ev.ts, "message_id": id,
			"metric": map[string]any{"metricName": ev.name, "metricValue": ev.value, "step": ev.step, "epoch": nil},
		}
	case "param":
		typ = "parameter_msg"
		payload = map[string]any{
			"local_timestamp": ev.ts, "message_id": id,
			"param": map[string]any{"paramName": ev.name, "paramValue": ev.value, "source": "manual", "step": nil},
		}
	case "other":
		typ = "log_other"
		payload = map[string]any{"key": ev.name, "value": ev.value, "message_id": id}
	case "image":
		typ = "file_upload"
		payload = map[string]any{
			"local_timestamp": ev.ts, "message_id": id, "upload_type": "visualization",
			"file_path": imageFileName(ev), "clean": true, "metadata": ev.metadata,
			"additional_params": map[string]any{
				"context": nil, "figCounter": ev.counter, "figName": ev.name, "imageId": ev.imageID,
				"overwrite": false, "runId": nil, "step": ev.step, "extension": "png",
			},
		}
	default:
		return nil, fmt.Errorf("comet_ml: unknown event kind %q", ev.kind)
	}
	return json.Marshal(map[string]any{"type": typ, "payload": payload})
}

// imageFileName is where an image's PNG lies in the staging directory and
// the archive (comet_ml uses temporary-file names; any name works).
func imageFileName(ev event) string { return "image-" + ev.imageID + ".png" }

func (a *archiveSink) send(ev event) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil {
		return a.err
	}
	if ev.kind == "image" {
		name := imageFileName(ev)
		if err := os.WriteFile(filepath.Join(a.staging, name), ev.png, 0o600); err != nil {
			return fmt.Errorf("comet_ml: writing image %q: %w", ev.name, err)
		}
		a.files = append(a.files, name)
	}
	a.messageID++
	b, err := line(ev, a.messageID)
	if err != nil {
		return err
	}
	if _, err := a.buf.Write(append(b, '\n')); err != nil {
		a.err = fmt.Errorf("comet_ml: writing %s: %w", messagesFile, err)
		return a.err
	}
	a.dirty = true
	return nil
}

// flusher is owned by the sink: it runs from start until finish closes stop.
func (a *archiveSink) flusher() {
	defer close(a.done)
	tick := time.NewTicker(flushInterval / 2)
	defer tick.Stop()
	for {
		select {
		case <-a.stop:
			return
		case <-tick.C:
			if err := a.flush(false); err != nil {
				logrus.Errorf("comet_ml: %v", err)
			}
		}
	}
}

// flush pushes buffered messages to the staging file and, when something
// changed, rewrites the archive (atomically: temporary file, then rename).
// Rewriting costs time proportional to the run's size, so a large archive
// is rewritten less often (at most 10% of the time); the staging
// directory always has everything.
func (a *archiveSink) flush(force bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil {
		return a.err
	}
	if err := a.buf.Flush(); err != nil {
		a.err = fmt.Errorf("comet_ml: flushing %s: %w", messagesFile, err)
		return a.err
	}
	if !force && (!a.dirty || time.Now().Before(a.nextZip)) {
		return nil
	}
	began := time.Now()
	a.meta.StopTime = began.UnixMilli()
	if err := a.writeZip(); err != nil {
		return err // not sticky: the next flush tries again
	}
	a.dirty = false
	a.nextZip = began.Add(10 * time.Since(began))
	return nil
}

func (a *archiveSink) writeZip() error {
	meta, err := json.Marshal(a.meta)
	if err != nil {
		return fmt.Errorf("comet_ml: encoding %s: %w", experimentFile, err)
	}
	if err := os.WriteFile(filepath.Join(a.staging, experimentFile), meta, 0o600); err != nil {
		return fmt.Errorf("comet_ml: writing %s: %w", experimentFile, err)
	}
	final := archivePath(a.dir, a.key)
	tmp, err := os.CreateTemp(a.dir, "."+a.key+".zip-*")
	if err != nil {
		return fmt.Errorf("comet_ml: creating the offline archive: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	zw := zip.NewWriter(tmp)
	errs := []error{addZipBytes(zw, experimentFile, meta), addZipFile(zw, messagesFile, filepath.Join(a.staging, messagesFile))}
	for _, f := range a.files {
		errs = append(errs, addZipFile(zw, f, filepath.Join(a.staging, f)))
	}
	errs = append(errs, zw.Close())
	errs = append(errs, tmp.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("comet_ml: writing the offline archive: %w", err)
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		return fmt.Errorf("comet_ml: installing the offline archive: %w", err)
	}
	return nil
}

func addZipBytes(zw *zip.Writer, name string, b []byte) error {
	w, err := zw.Create(name)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func addZipFile(zw *zip.Writer, name, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w, err := zw.Create(name)
	if err != nil {
		return err
	}
	_, err = io.Copy(w, f)
	return err
}

func (a *archiveSink) finish(t *Tracker) error {
	close(a.stop)
	<-a.done
	err := a.flush(true)
	if cerr := a.messages.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("comet_ml: closing %s: %w", messagesFile, cerr)
	}
	if err != nil {
		return fmt.Errorf("comet_ml: finishing the offline experiment (data kept in %s): %w", a.staging, err)
	}
	if err := os.RemoveAll(a.staging); err != nil {
		logrus.Warnf("comet_ml: removing %s: %v", a.staging, err)
	}
	logrus.Infof("comet_ml: offline experiment saved; upload it with: comet upload %s", archivePath(a.dir, a.key))
	return nil
}
