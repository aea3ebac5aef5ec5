// Package tensorboard is goaccel's native TensorBoard tracker: it writes
// TensorBoard event files (events.out.tfevents.*) directly from Go, with no
// Python, readable by TensorBoard, EventAccumulator and tbparse.
//
// Scalars become simple_value summaries, strings text-plugin summaries, maps
// of numbers tensorboardX's add_scalars layout (one run directory per member),
// configuration the hparams plugin's summaries plus an hparams.yml, images
// PNG Summary.Image values and tables Markdown text. Events are buffered and
// written by a background goroutine at least every 500 ms, and on Finish.
//
// The package does not import package tracking (which imports it to register
// the "tensorboard" tracker); *Tracker has tracking.GeneralTracker's method set.
package tensorboard

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"gopkg.in/yaml.v3"

	"github.com/goaccel/goaccel/tracking/values"
)

// Name is the tracker's LoggerType name.
const Name = "tensorboard"

// Options configure a Tracker.
type Options struct {
	// RunName is the sub-directory of LoggingDir for this run (Accelerate's
	// project_name); empty means LoggingDir itself.
	RunName string
	// LoggingDir is the parent directory (required).
	LoggingDir string
	// FlushInterval is how often buffered events are written; ≤ 0 or above
	// DefaultFlushInterval means DefaultFlushInterval.
	FlushInterval time.Duration
	// Logger receives warnings; nil means logrus.StandardLogger().
	Logger logrus.FieldLogger
}

// Tracker is the "tensorboard" tracker.
type Tracker struct {
	opts   Options
	warn   *values.Warner
	runDir string

	mu       sync.Mutex // guards w and finished across Start/Finish
	w        *Writer
	finished bool

	autoStep atomic.Int64
	hparams  atomic.Bool // StoreInitConfiguration ran: Finish ends the session
	scratch  sync.Pool   // *scratch
	tags     sync.Map    // scalar tags seen, for the hparams experiment's metrics
}

type scratch struct {
	tags []string
	vals []float64
}

// New is the registry constructor: the run directory is
// <loggingDir>/<runName>. initKwargs keys honoured: "flush_secs" (number of
// seconds; only values below the 0.5 s default take effect), "logger" (a
// logrus.FieldLogger). Other keys are reported with a warning.
func New(runName, loggingDir string, initKwargs map[string]any) (*Tracker, error) {
	opts := Options{RunName: runName, LoggingDir: loggingDir, Logger: values.LoggerFromKwargs(initKwargs)}
	var unknown []string
	for k, v := range initKwargs {
		switch k {
		case "logger":
		case "flush_secs":
			f, ok := values.Float(v)
			if !ok || f <= 0 {
				return nil, fmt.Errorf("tensorboard: init kwarg flush_secs must be a positive number of seconds, got %v (%T)", v, v)
			}
			opts.FlushInterval = time.Duration(f * float64(time.Second))
		default:
			unknown = append(unknown, k)
		}
	}
	t, err := Open(opts)
	if err != nil {
		return nil, err
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		t.warn.Warnf("ignoring unsupported init kwargs %q", unknown)
	}
	return t, nil
}

// Open returns a Tracker for opts; nothing is created until Start.
func Open(opts Options) (*Tracker, error) {
	if opts.LoggingDir == "" {
		return nil, errors.New("Logging with `tensorboard` requires a `logging_dir` to be passed in.")
	}
	if opts.FlushInterval <= 0 || opts.FlushInterval > DefaultFlushInterval {
		opts.FlushInterval = DefaultFlushInterval
	}
	t := &Tracker{opts: opts, warn: values.NewWarner(Name, opts.Logger), runDir: filepath.Join(opts.LoggingDir, opts.RunName)}
	t.scratch.New = func() any { return &scratch{tags: make([]string, 0, 16), vals: make([]float64, 0, 16)} }
	return t, nil
}

// Name returns "tensorboard".
func (t *Tracker) Name() string { return Name }

// RequiresLoggingDirectory returns true.
func (t *Tracker) RequiresLoggingDirectory() bool { return true }

// MainProcessOnly returns true.
func (t *Tracker) MainProcessOnly() bool { return true }

// RunDir is the directory holding this run's event file.
func (t *Tracker) RunDir() string { return t.runDir }

// Tracker returns the *Writer (nil before Start).
func (t *Tracker) Tracker() any {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.w
}

func (t *Tracker) writer() (*Writer, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.w == nil {
		return nil, errors.New("tensorboard: the tracker is not started (call Start first)")
	}
	if t.finished {
		return nil, errors.New("tensorboard: the tracker is finished")
	}
	return t.w, nil
}

// Start creates the run directory and its event file.
func (t *Tracker) Start() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.w != nil {
		return nil
	}
	w, err := NewWriter(t.runDir, t.opts.FlushInterval)
	if err != nil {
		return err
	}
	t.w = w
	return nil
}

// StoreInitConfiguration records values as hyperparameters (hparams plugin)
// and writes them to <run dir>/hparams.yml. Nested maps are flattened with
// "/" into hparam names; numbers, strings and bools keep their type, other
// values are recorded as their JSON-like text.
func (t *Tracker) StoreInitConfiguration(config map[string]any) error {
	w, err := t.writer()
	if err != nil {
		return err
	}
	var hps []HParam
	flattenHParams("", config, &hps)
	var metrics []string
	t.tags.Range(func(k, _ any) bool { metrics = append(metrics, k.(string)); return true })
	sort.Strings(metrics)
	t.hparams.Store(true)
	errs := []error{w.AddHParams(hps, metrics)}
	y, yerr := yaml.Marshal(config)
	if yerr != nil {
		errs = append(errs, fmt.Errorf("tensorboard: encoding hparams.yml: %w", yerr))
	} else if werr := os.WriteFile(filepath.Join(t.runDir, "hparams.yml"), y, 0o644); werr != nil {
		errs = append(errs, fmt.Errorf("tensorboard: writing hparams.yml: %w", werr))
	}
	return errors.Join(errs...)
}

func flattenHParams(prefix string, m map[string]any, out *[]HParam) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m[k]
		name := prefix + k
		if sub, ok := v.(map[string]any); ok {
			flattenHParams(name+"/", sub, out)
			continue
		}
		switch values.Classify(v) {
		case values.Scalar:
			if b, ok := v.(bool); ok {
				*out = append(*out, HParam{name, b})
			} else {
				f, _ := values.Float(v)
				*out = append(*out, HParam{name, f})
			}
		case values.Text:
			s, _ := values.String(v)
			*out = append(*out, HParam{name, s})
		default:
			*out = append(*out, HParam{name, fmt.Sprint(v)})
		}
	}
}

// step resolves NoStep to this tracker's count of step-less Log calls.
func (t *Tracker) step(step int) int64 {
	if step == values.NoStep {
		return t.autoStep.Add(1) - 1
	}
	return int64(step)
}

// Log records numbers as scalars, strings as text and maps of numbers as
// add_scalars groups; other values are skipped with a warning naming the
// key. With NoStep the step is the number of earlier step-less calls.
// kwargs key honoured: "walltime" (seconds since the epoch).
func (t *Tracker) Log(vals map[string]any, step int, kwargs map[string]any) error {
	w, err := t.writer()
	if err != nil {
		return err
	}
	st := t.step(step)
	wall := time.Now()
	if wt, ok := kwargs["walltime"]; ok {
		if f, ok := values.Float(wt); ok {
			sec, frac := math.Modf(f)
			wall = time.Unix(int64(sec), int64(frac*1e9))
		}
	}
	sc := t.scratch.Get().(*scratch)
	sc.tags, sc.vals = sc.tags[:0], sc.vals[:0]
	var errs []error
	for k, v := range vals {
		if f, ok := values.Float(v); ok {
			sc.tags = append(sc.tags, k)
			sc.vals = append(sc.vals, f)
			if _, seen := t.tags.Load(k); !seen {
				t.tags.Store(k, struct{}{})
			}
			continue
		}
		switch values.Classify(v) {
		case values.Text:
			s, _ := values.String(v)
			errs = append(errs, w.AddText(k, s, st))
		case values.Group:
			entries, _ := values.GroupEntries(v)
			m := make(map[string]float64, len(entries))
			for _, e := range entries {
				m[e.Key] = e.Value
			}
			errs = append(errs, w.AddScalars(k, m, st))
		default:
			t.warn.Unsupported(k, v, "numbers, strings and maps of numbers")
		}
	}
	if len(sc.tags) > 0 {
		errs = append(errs, w.main.appendScalarsWall(wall, st, sc.tags, sc.vals))
	}
	t.scratch.Put(sc)
	return errors.Join(errs...)
}

// LogImages records images: a value may be an image.Image, a []image.Image
// (tags tag/0, tag/1, …) or PNG bytes.
func (t *Tracker) LogImages(vals map[string]any, step int, kwargs map[string]any) error {
	w, err := t.writer()
	if err != nil {
		return err
	}
	st := t.step(step)
	var errs []error
	for k, v := range vals {
		switch x := v.(type) {
		case image.Image:
			errs = append(errs, w.AddImage(k, x, st))
		case []image.Image:
			for i, img := range x {
				errs = append(errs, w.AddImage(fmt.Sprintf("%s/%d", k, i), img, st))
			}
		case []byte:
			errs = append(errs, w.AddPNG(k, x, st))
		default:
			t.warn.Unsupported(k, v, "image.Image, []image.Image or PNG bytes as images")
		}
	}
	return errors.Join(errs...)
}

// LogTable records a table as Markdown text under name (TensorBoard's text
// dashboard renders Markdown tables).
func (t *Tracker) LogTable(name string, columns []string, data [][]any, step int, kwargs map[string]any) error {
	w, err := t.writer()
	if err != nil {
		return err
	}
	return w.AddText(name, MarkdownTable(columns, data), t.step(step))
}

// MarkdownTable renders columns and rows as a Markdown table.
func MarkdownTable(columns []string, data [][]any) string {
	var b bytes.Buffer
	esc := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ") }
	b.WriteString("|")
	for _, c := range columns {
		b.WriteString(" " + esc(c) + " |")
	}
	b.WriteString("\n|")
	for range columns {
		b.WriteString(" --- |")
	}
	for _, row := range data {
		b.WriteString("\n|")
		for _, cell := range row {
			b.WriteString(" " + esc(fmt.Sprint(cell)) + " |")
		}
	}
	return b.String()
}

// Flush writes buffered events to disk now.
func (t *Tracker) Flush() error {
	w, err := t.writer()
	if err != nil {
		return err
	}
	return w.Flush()
}

// Finish ends the hparams session, flushes and closes the files. It is
// idempotent and a no-op before Start.
func (t *Tracker) Finish() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.w == nil || t.finished {
		return nil
	}
	t.finished = true
	var end error
	if t.hparams.Load() {
		end = t.w.EndSession(false)
	}
	return errors.Join(end, t.w.Close())
}
