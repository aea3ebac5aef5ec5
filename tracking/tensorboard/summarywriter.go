package tensorboard

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// DefaultFlushInterval is how often a Writer's background goroutine writes
// buffered events to disk. It is below one second so that every value logged
// more than a second before a crash is in the file.
const DefaultFlushInterval = 500 * time.Millisecond

// Writer is a native TensorBoard event-file writer for one run directory,
// the Go counterpart of tensorboardX's SummaryWriter. Events are encoded into
// an in-memory buffer and written by a background goroutine (owned by the
// Writer, stopped by Close) every flush interval, when the buffer passes
// 1 MiB, and on Flush and Close.
//
// A Writer is safe for concurrent use.
type Writer struct {
	dir  string
	main *eventFile

	mu   sync.Mutex
	subs map[string]*eventFile // add_scalars runs by directory

	kickc  chan struct{}
	stopc  chan struct{}
	done   chan struct{}
	closed sync.Once
	cerr   error
}

// NewWriter creates dir and an event file in it, and starts the flusher.
// interval ≤ 0 means DefaultFlushInterval.
func NewWriter(dir string, interval time.Duration) (*Writer, error) {
	if interval <= 0 {
		interval = DefaultFlushInterval
	}
	w := &Writer{dir: dir, subs: map[string]*eventFile{}, kickc: make(chan struct{}, 1), stopc: make(chan struct{}), done: make(chan struct{})}
	main, err := openEventFile(dir, w.kick)
	if err != nil {
		return nil, err
	}
	w.main = main
	go w.flushLoop(interval)
	return w, nil
}

// Dir is the run directory.
func (w *Writer) Dir() string { return w.dir }

// Path is the main event file.
func (w *Writer) Path() string { return w.main.path }

func (w *Writer) kick() {
	select {
	case w.kickc <- struct{}{}:
	default:
	}
}

func (w *Writer) flushLoop(interval time.Duration) {
	defer close(w.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-w.stopc:
			return
		case <-t.C:
		case <-w.kickc:
		}
		_ = w.flushAll() // errors are kept per file and returned to callers
	}
}

func (w *Writer) files() []*eventFile {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*eventFile, 0, 1+len(w.subs))
	out = append(out, w.main)
	for _, f := range w.subs {
		out = append(out, f)
	}
	return out
}

func (w *Writer) flushAll() error {
	var errs []error
	for _, f := range w.files() {
		if err := f.flush(); err != nil && !errors.Is(err, errClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Flush writes everything buffered so far to disk.
func (w *Writer) Flush() error { return w.flushAll() }

// Close stops the flusher and flushes, syncs and closes every file. Later
// calls return the first call's result.
func (w *Writer) Close() error {
	w.closed.Do(func() {
		close(w.stopc)
		<-w.done
		var errs []error
		for _, f := range w.files() {
			if err := f.close(); err != nil {
				errs = append(errs, err)
			}
		}
		w.cerr = errors.Join(errs...)
	})
	return w.cerr
}

// AddScalar records one scalar (tensorboardX add_scalar).
func (w *Writer) AddScalar(tag string, value float64, step int64) error {
	return w.main.appendScalars(wallSeconds(time.Now()), step, []string{tag}, []float64{value})
}

// AddScalarsAt records several scalars as one event at step and wall time.
func (w *Writer) AddScalarsAt(tags []string, vals []float64, step int64, wall time.Time) error {
	if len(tags) != len(vals) {
		return fmt.Errorf("tensorboard: %d tags but %d values", len(tags), len(vals))
	}
	return w.main.appendScalars(wallSeconds(wall), step, tags, vals)
}

// AddScalars records a group of scalars the way tensorboardX's add_scalars
// does: each member key gets its own run directory
// <dir>/<mainTag with "/" replaced by "_">_<key>, holding a scalar tagged
// mainTag, so TensorBoard draws them as lines of one chart.
func (w *Writer) AddScalars(mainTag string, members map[string]float64, step int64) error {
	wall := wallSeconds(time.Now())
	var errs []error
	for k, v := range members {
		f, err := w.sub(mainTag, k)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := f.appendScalars(wall, step, []string{mainTag}, []float64{v}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// GroupDir is the run directory AddScalars uses for one member.
func (w *Writer) GroupDir(mainTag, key string) string {
	return filepath.Join(w.dir, strings.ReplaceAll(mainTag, "/", "_")+"_"+key)
}

func (w *Writer) sub(mainTag, key string) (*eventFile, error) {
	dir := w.GroupDir(mainTag, key)
	w.mu.Lock()
	defer w.mu.Unlock()
	if f, ok := w.subs[dir]; ok {
		return f, nil
	}
	f, err := openEventFile(dir, w.kick)
	if err != nil {
		return nil, err
	}
	w.subs[dir] = f
	return f, nil
}

// AddText records a string (text plugin, DT_STRING tensor of shape [1]).
func (w *Writer) AddText(tag, text string, step int64) error {
	ev := summaryEvent(nil, wallSeconds(time.Now()), step, appendValue(nil, textValueFields(tag, text)))
	return w.main.appendRaw(ev)
}

// AddImage records an image, PNG-encoded (Summary.Image).
func (w *Writer) AddImage(tag string, img image.Image, step int64) error {
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return fmt.Errorf("tensorboard: encoding image %q as PNG: %w", tag, err)
	}
	return w.AddPNG(tag, buf.Bytes(), step)
}

// AddPNG records PNG-encoded bytes as an image.
func (w *Writer) AddPNG(tag string, data []byte, step int64) error {
	cfg, err := png.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("tensorboard: image %q is not a PNG: %w", tag, err)
	}
	cs := colorspaceOf(cfg)
	ev := summaryEvent(nil, wallSeconds(time.Now()), step, appendValue(nil, imageValueFields(tag, data, cfg.Height, cfg.Width, cs)))
	return w.main.appendRaw(ev)
}

// colorspaceOf maps a PNG's colour model to Summary.Image.colorspace
// (1 grayscale, 3 RGB, 4 RGBA). image/png reports RGB files as RGBAModel,
// RGBA and grayscale+alpha files as NRGBAModel.
func colorspaceOf(cfg image.Config) int {
	switch cfg.ColorModel {
	case color.GrayModel, color.Gray16Model:
		return 1
	case color.RGBAModel, color.RGBA64Model:
		return 3
	}
	if p, ok := cfg.ColorModel.(color.Palette); ok {
		for _, c := range p {
			if _, _, _, a := c.RGBA(); a != 0xffff {
				return 4
			}
		}
		return 3
	}
	return 4
}

// HParam is one hyperparameter value for AddHParams: a float64, string or bool.
type HParam struct {
	Name  string
	Value any
}

// AddHParams records hyperparameters for the hparams dashboard: the
// `_hparams_/experiment` and `_hparams_/session_start_info` summaries
// (plugin "hparams"). metrics names scalar tags to list as the
// experiment's metrics. EndSession writes `_hparams_/session_end_info`.
func (w *Writer) AddHParams(hps []HParam, metrics []string) error {
	list := make([]hparam, 0, len(hps))
	for _, h := range hps {
		p := hparam{name: h.Name}
		switch v := h.Value.(type) {
		case float64:
			p.kind, p.num = dataTypeFloat64, v
		case bool:
			p.kind, p.bool = dataTypeBool, v
		case string:
			p.kind, p.str = dataTypeString, v
		default:
			p.kind, p.str = dataTypeString, fmt.Sprint(v)
		}
		list = append(list, p)
	}
	now := wallSeconds(time.Now())
	var summary []byte
	summary = appendValue(summary, hparamsValueFields("_hparams_/experiment", experimentContent(list, metrics, now)))
	summary = appendValue(summary, hparamsValueFields("_hparams_/session_start_info", sessionStartContent(list, "", now)))
	return w.main.appendRaw(summaryEvent(nil, now, 0, summary))
}

// EndSession writes `_hparams_/session_end_info` with status success (or
// failure when failed).
func (w *Writer) EndSession(failed bool) error {
	status := statusSuccess
	if failed {
		status = statusFailure
	}
	now := wallSeconds(time.Now())
	summary := appendValue(nil, hparamsValueFields("_hparams_/session_end_info", sessionEndContent(status, now)))
	return w.main.appendRaw(summaryEvent(nil, now, 0, summary))
}
