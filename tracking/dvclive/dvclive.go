// Package dvclive is goaccel's DVCLive tracker: it writes the directory
// layout of Iterative's dvclive library from Go, so `dvc metrics show`,
// `dvc plots show`, `dvc params show` and DVC Studio read it:
//
//	<dir>/params.yaml                   hyperparameters
//	<dir>/metrics.json                  latest value of every metric + "step" ("a/b" nests)
//	<dir>/plots/metrics/<name>.tsv      timestamp<TAB>step<TAB><last name element>
//	<dir>/dvc.yaml                      params, metrics and plots (x: step)
//
// Unlike Accelerate's DVCLiveTracker, the step is the one the caller passed:
// Log never advances it by itself. Rows are buffered and written by a
// background goroutine at least every 500 ms, and on Flush and Finish.
//
// The package does not import package tracking (which imports it to register
// "dvclive"); *Tracker has tracking.GeneralTracker's method set.
package dvclive

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"gopkg.in/yaml.v3"

	"github.com/goaccel/goaccel/tracking/values"
)

// Name is the tracker's LoggerType name.
const Name = "dvclive"

// DefaultFlushInterval is how often buffered rows reach the files.
const DefaultFlushInterval = 500 * time.Millisecond

// Options configure a Tracker.
type Options struct {
	// Dir is the dvclive directory (dvclive's Live(dir=...)).
	Dir string
	// Resume appends to an existing directory instead of starting afresh
	// (dvclive's resume=True).
	Resume bool
	// NoDVCYAML skips writing <Dir>/dvc.yaml.
	NoDVCYAML bool
	// FlushInterval ≤ 0 or above DefaultFlushInterval means DefaultFlushInterval.
	FlushInterval time.Duration
	// Logger receives warnings; nil means logrus.StandardLogger().
	Logger logrus.FieldLogger
}

// Tracker is the "dvclive" tracker.
type Tracker struct {
	opts Options
	warn *values.Warner

	mu       sync.Mutex // guards everything below
	started  bool
	finished bool
	series   map[string]*series
	order    []*series
	step     int64
	dirty    bool // latest changed since metrics.json was written
	autoStep int64
	params   map[string]any

	wmu   sync.Mutex // serialises file writing
	stopc chan struct{}
	done  chan struct{}
}

type series struct {
	name    string // metric name, "a/b"
	file    string // absolute TSV path
	rows    []row  // rows not yet written (formatted by the flusher)
	spare   []row  // the other buffer, reused so rows does not regrow
	latest  num
	created bool // the file exists with its header
}

// row is one logged value, kept unformatted so Log stays cheap (32 bytes).
type row struct {
	ts, step int64
	v        num
}

// num is a number as logged: integers (|i| < 2^53, held exactly in f) stay
// integers in the files; float32 values print in float32's shortest form.
type num struct {
	f    float64
	kind uint8
}

const (
	kindFloat64 uint8 = iota
	kindFloat32
	kindInt
)

func (n num) append(b []byte) []byte {
	switch n.kind {
	case kindInt:
		return strconv.AppendInt(b, int64(n.f), 10)
	case kindFloat32:
		return append(b, formatFloat(n.f, 32)...)
	}
	return append(b, formatFloat(n.f, 64)...)
}

// New is the registry constructor. The directory is initKwargs["dir"], else
// <loggingDir>/dvclive when a logging directory is set, else ./dvclive.
// initKwargs keys honoured: "dir" (string), "resume" (bool), "dvcyaml"
// (bool, default true), "logger" (logrus.FieldLogger); others are reported
// with a warning. runName is not used (dvclive has no run name).
func New(runName, loggingDir string, initKwargs map[string]any) (*Tracker, error) {
	opts := Options{Dir: "dvclive", Logger: values.LoggerFromKwargs(initKwargs)}
	if loggingDir != "" {
		opts.Dir = filepath.Join(loggingDir, "dvclive")
	}
	var unknown []string
	for k, v := range initKwargs {
		switch k {
		case "logger":
		case "dir":
			s, ok := v.(string)
			if !ok || s == "" {
				return nil, fmt.Errorf("dvclive: init kwarg dir must be a non-empty string, got %v (%T)", v, v)
			}
			opts.Dir = s
		case "resume", "dvcyaml":
			b, ok := v.(bool)
			if !ok {
				return nil, fmt.Errorf("dvclive: init kwarg %s must be a bool, got %v (%T)", k, v, v)
			}
			if k == "resume" {
				opts.Resume = b
			} else {
				opts.NoDVCYAML = !b
			}
		default:
			unknown = append(unknown, k)
		}
	}
	t := Open(opts)
	if len(unknown) > 0 {
		sort.Strings(unknown)
		t.warn.Warnf("ignoring unsupported init kwargs %q", unknown)
	}
	return t, nil
}

// Open returns a Tracker for opts; nothing is written until Start.
func Open(opts Options) *Tracker {
	if opts.Dir == "" {
		opts.Dir = "dvclive"
	}
	if opts.FlushInterval <= 0 || opts.FlushInterval > DefaultFlushInterval {
		opts.FlushInterval = DefaultFlushInterval
	}
	return &Tracker{opts: opts, warn: values.NewWarner(Name, opts.Logger), series: map[string]*series{}}
}

// Name returns "dvclive".
func (t *Tracker) Name() string { return Name }

// RequiresLoggingDirectory returns false (as Accelerate's).
func (t *Tracker) RequiresLoggingDirectory() bool { return false }

// MainProcessOnly returns true.
func (t *Tracker) MainProcessOnly() bool { return true }

// Dir is the dvclive directory.
func (t *Tracker) Dir() string { return t.opts.Dir }

// Tracker returns the *Tracker itself (there is no separate Live object).
func (t *Tracker) Tracker() any { return t }

// Start prepares the directory (clearing an earlier run's metrics, plots and
// params unless Resume), writes dvc.yaml and starts the flusher.
func (t *Tracker) Start() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.started {
		return nil
	}
	dir := t.opts.Dir
	if !t.opts.Resume {
		for _, p := range []string{filepath.Join(dir, "plots", "metrics"), filepath.Join(dir, "metrics.json"), filepath.Join(dir, "params.yaml")} {
			if err := os.RemoveAll(p); err != nil {
				return fmt.Errorf("dvclive: clearing the previous run's %s: %w", p, err)
			}
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "plots", "metrics"), 0o755); err != nil {
		return fmt.Errorf("dvclive: creating %s: %w", dir, err)
	}
	if !t.opts.NoDVCYAML {
		y := "params:\n- params.yaml\nmetrics:\n- metrics.json\nplots:\n- plots/metrics:\n    x: step\n"
		if err := writeFileAtomic(filepath.Join(dir, "dvc.yaml"), []byte(y)); err != nil {
			return err
		}
	}
	t.started = true
	t.stopc, t.done = make(chan struct{}), make(chan struct{})
	go t.flushLoop()
	return nil
}

func (t *Tracker) flushLoop() {
	defer close(t.done)
	tk := time.NewTicker(t.opts.FlushInterval)
	defer tk.Stop()
	var lastErr string
	for {
		select {
		case <-t.stopc:
			return
		case <-tk.C:
		}
		if err := t.flush(); err != nil && err.Error() != lastErr {
			lastErr = err.Error()
			t.warn.Warnf("writing files in the background: %v", err)
		}
	}
}

func (t *Tracker) ready() error {
	if !t.started {
		return errors.New("dvclive: the tracker is not started (call Start first)")
	}
	if t.finished {
		return errors.New("dvclive: the tracker is finished")
	}
	return nil
}

// StoreInitConfiguration merges config into params.yaml (written now).
func (t *Tracker) StoreInitConfiguration(config map[string]any) error {
	t.mu.Lock()
	if err := t.ready(); err != nil {
		t.mu.Unlock()
		return err
	}
	if t.params == nil {
		t.params = map[string]any{}
	}
	for k, v := range config {
		t.params[k] = v
	}
	y, err := yaml.Marshal(t.params)
	t.mu.Unlock()
	if err != nil {
		return fmt.Errorf("dvclive: encoding params.yaml: %w", err)
	}
	return writeFileAtomic(filepath.Join(t.opts.Dir, "params.yaml"), y)
}

// validName reports whether a metric name is usable as a relative path
// under plots/metrics.
func validName(name string) bool {
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, "\\") || strings.ContainsAny(name, "\x00\t\n") {
		return false
	}
	for _, el := range strings.Split(name, "/") {
		if el == "" || el == "." || el == ".." {
			return false
		}
	}
	return true
}

// Log records numbers (and maps of numbers, as name/key metrics) at step.
// With NoStep the step is this tracker's count of step-less calls. Strings
// and other values are skipped with a warning naming the key (dvclive's
// metrics are numeric).
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
	t.step = st
	t.dirty = true
	for k, v := range vals {
		if n, ok := toNum(v); ok {
			t.record(k, n, ts, st)
			continue
		}
		if values.Classify(v) == values.Group {
			entries, _ := values.GroupEntries(v)
			for _, e := range entries {
				t.record(k+"/"+e.Key, num{f: e.Value}, ts, st)
			}
			continue
		}
		t.warn.Unsupported(k, v, "numbers and maps of numbers")
	}
	return nil
}

// record queues one row; callers hold t.mu.
func (t *Tracker) record(name string, n num, ts, step int64) {
	s, ok := t.series[name]
	if !ok {
		if !validName(name) {
			t.warn.Unsupported(name, name, "metric names usable as relative file paths (no empty, '.' or '..' elements)")
			return
		}
		s = &series{name: name, file: filepath.Join(t.opts.Dir, "plots", "metrics", filepath.FromSlash(name)+".tsv")}
		t.series[name] = s
		t.order = append(t.order, s)
	}
	s.rows = append(s.rows, row{ts, step, n})
	s.latest = n
}

// toNum converts a scalar, keeping integers (and bools, as 1/0) integral.
func toNum(v any) (num, bool) {
	switch x := v.(type) {
	case float64:
		return num{f: x}, true
	case float32:
		return num{f: float64(x), kind: kindFloat32}, true
	case string:
		return num{}, false
	}
	if values.Classify(v) != values.Scalar {
		return num{}, false
	}
	f, _ := values.Float(v)
	if k := reflect.ValueOf(v).Kind(); k != reflect.Float32 && k != reflect.Float64 && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return num{f: f, kind: kindInt}, true
	}
	return num{f: f}, true
}

// formatFloat renders a float the way every reader accepts: shortest
// form, NaN and infinities as Python's json module writes them.
func formatFloat(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(f, 'g', -1, bits)
}

// Flush writes buffered rows and metrics.json now.
func (t *Tracker) Flush() error {
	t.mu.Lock()
	err := t.ready()
	t.mu.Unlock()
	if err != nil {
		return err
	}
	return t.flush()
}

type pendingRows struct {
	s    *series
	rows []row
}

func (t *Tracker) flush() error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	t.mu.Lock()
	var pend []pendingRows
	for _, s := range t.order {
		if len(s.rows) > 0 || !s.created {
			pend = append(pend, pendingRows{s, s.rows})
			s.rows, s.spare = s.spare[:0], nil
		}
	}
	var metrics []byte
	if t.dirty {
		metrics = t.metricsJSON()
		t.dirty = false
	}
	t.mu.Unlock()

	var errs []error
	for _, p := range pend {
		err := appendRows(p.s, p.rows)
		t.mu.Lock()
		if err != nil {
			errs = append(errs, err)
			p.s.rows = append(p.rows, p.s.rows...) // kept for the next flush: nothing is lost
		} else if cap(p.rows) <= 1<<17 { // reuse up to 4 MiB per series
			p.s.spare = p.rows[:0]
		}
		t.mu.Unlock()
	}
	if metrics != nil {
		if err := writeFileAtomic(filepath.Join(t.opts.Dir, "metrics.json"), metrics); err != nil {
			errs = append(errs, err)
			t.mu.Lock()
			t.dirty = true
			t.mu.Unlock()
		}
	}
	return errors.Join(errs...)
}

// appendRows appends rows to the series' TSV, creating it with its header.
// Only the flusher (under wmu) touches s.created.
func appendRows(s *series, rows []row) error {
	flags := os.O_WRONLY | os.O_APPEND | os.O_CREATE
	if err := os.MkdirAll(filepath.Dir(s.file), 0o755); err != nil {
		return fmt.Errorf("dvclive: creating the plot directory for %s: %w", s.name, err)
	}
	f, err := os.OpenFile(s.file, flags, 0o644)
	if err != nil {
		return fmt.Errorf("dvclive: opening %s: %w", s.file, err)
	}
	var data []byte
	if !s.created {
		if fi, err := f.Stat(); err == nil && fi.Size() == 0 {
			data = []byte("timestamp\tstep\t" + path.Base(s.name) + "\n")
		}
	}
	for _, r := range rows {
		data = strconv.AppendInt(data, r.ts, 10)
		data = append(data, '\t')
		data = strconv.AppendInt(data, r.step, 10)
		data = append(data, '\t')
		data = r.v.append(data)
		data = append(data, '\n')
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("dvclive: writing %s: %w", s.file, err)
	}
	s.created = true
	return nil
}

// metricsJSON renders the latest values, nesting "a/b" names, plus "step".
// Callers hold t.mu.
func (t *Tracker) metricsJSON() []byte {
	type node struct {
		leaf     string
		children map[string]*node
	}
	root := &node{children: map[string]*node{}}
	names := make([]string, 0, len(t.series))
	for n := range t.series {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		parts := strings.Split(name, "/")
		cur := root
		ok := true
		for _, p := range parts[:len(parts)-1] {
			next, exists := cur.children[p]
			if !exists {
				next = &node{children: map[string]*node{}}
				cur.children[p] = next
			} else if next.children == nil {
				ok = false
				break
			}
			cur = next
		}
		last := parts[len(parts)-1]
		if existing, exists := cur.children[last]; !ok || (exists && existing.children != nil) {
			t.warn.Unsupported(name, name, "metric names that are not also a prefix of other names in metrics.json")
			continue
		}
		cur.children[last] = &node{leaf: string(t.series[name].latest.append(nil))}
	}
	root.children["step"] = &node{leaf: strconv.FormatInt(t.step, 10)}
	var b bytes.Buffer
	var write func(n *node, indent string)
	write = func(n *node, indent string) {
		keys := make([]string, 0, len(n.children))
		for k := range n.children {
			if k != "step" || n != root {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		if n == root {
			keys = append(keys, "step")
		}
		b.WriteString("{")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString("\n" + indent + "    " + strconv.Quote(k) + ": ")
			c := n.children[k]
			if c.children != nil {
				write(c, indent+"    ")
			} else {
				b.WriteString(c.leaf)
			}
		}
		b.WriteString("\n" + indent + "}")
	}
	write(root, "")
	b.WriteString("\n")
	return b.Bytes()
}

// writeFileAtomic writes data to a temporary file and renames it over path,
// so readers never see a half-written file.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("dvclive: writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("dvclive: replacing %s: %w", path, err)
	}
	return nil
}

// Finish writes everything and stops the flusher. Idempotent; a no-op
// before Start.
func (t *Tracker) Finish() error {
	t.mu.Lock()
	if !t.started || t.finished {
		t.mu.Unlock()
		return nil
	}
	t.finished = true
	t.mu.Unlock()
	close(t.stopc)
	<-t.done
	return t.flush()
}
