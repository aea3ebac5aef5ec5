// Package livechart is a tracker that draws every logged scalar under the
// running notebook cell: one SVG line chart per metric (a map of numbers is
// one chart with a line per member), in a grid, above a table of the latest
// values, all in a single display output that is replaced in place.
//
// Drawing is throttled: at most one update per Options.Interval (250 ms by
// default, so about 4 a second however fast Log is called). A background
// goroutine, owned by the Tracker and stopped by Finish, draws the latest
// values even when logging stops, and Finish draws the final state. Log only
// appends to in-memory series, so it never waits for rendering.
//
// The output is a standard MIME bundle: text/html (inline SVG charts and an
// HTML table), image/svg+xml (the chart grid as one SVG document) and
// text/plain (the table), so it shows in JupyterLab, classic Notebook, VS
// Code and in notebooks executed by nbclient. It goes through package
// display, i.e. to the process's current display sink.
//
// The package does not import package tracking; *Tracker has
// tracking.GeneralTracker's method set.
package livechart

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/goaccel/goaccel/display"
	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/tracking/values"
)

// Name is the tracker's name.
const Name = "livechart"

// Defaults.
const (
	DefaultInterval  = 250 * time.Millisecond
	DefaultMaxPoints = 2000
)

// Options configure a Tracker.
type Options struct {
	// Title is shown above the charts (Accelerate's project name).
	Title string
	// Interval is the least time between two updates of the output.
	Interval time.Duration
	// MaxPoints bounds the points kept per line: beyond it, every other
	// point is dropped from the drawing (the latest value is always drawn).
	MaxPoints int
	// Logger receives warnings; nil means logrus.StandardLogger().
	Logger logrus.FieldLogger
}

type point struct{ x, y float64 }

type line struct {
	name   string
	pts    []point
	stride int // keep one point in stride
	seen   int // points logged
	last   point
}

type chart struct {
	name  string
	lines map[string]*line
	order []string
}

// Tracker is the "livechart" tracker.
type Tracker struct {
	opts Options
	warn *values.Warner

	mu       sync.Mutex // guards the series, texts, started, finished
	charts   map[string]*chart
	order    []string
	texts    map[string]string
	lastStep int64
	started  bool
	finished bool
	version  uint64 // bumped by every Log

	handle   *display.Handle // owned by the drawing goroutine, then Finish
	drawn    uint64          // version last drawn
	kick     chan struct{}
	stopc    chan struct{}
	done     chan struct{}
	lastDraw time.Time
}

// New is the registry constructor. initKwargs keys honoured: "title"
// (string, default runName), "interval" (seconds), "max_points" (int),
// "logger" (logrus.FieldLogger); others are reported with a warning.
func New(runName, loggingDir string, initKwargs map[string]any) (*Tracker, error) {
	opts := Options{Title: runName, Logger: values.LoggerFromKwargs(initKwargs)}
	var unknown []string
	for k, v := range initKwargs {
		switch k {
		case "logger":
		case "title":
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("livechart: init kwarg title must be a string, got %T", v)
			}
			opts.Title = s
		case "interval":
			f, ok := values.Float(v)
			if !ok || f <= 0 {
				return nil, fmt.Errorf("livechart: init kwarg interval must be a positive number of seconds, got %v (%T)", v, v)
			}
			opts.Interval = time.Duration(f * float64(time.Second))
		case "max_points":
			f, ok := values.Float(v)
			if !ok || f < 2 {
				return nil, fmt.Errorf("livechart: init kwarg max_points must be a number ≥ 2, got %v (%T)", v, v)
			}
			opts.MaxPoints = int(f)
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

// Open returns a Tracker for opts; nothing is shown until values are logged.
func Open(opts Options) *Tracker {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.MaxPoints < 2 {
		opts.MaxPoints = DefaultMaxPoints
	}
	return &Tracker{opts: opts, warn: values.NewWarner(Name, opts.Logger), charts: map[string]*chart{}, texts: map[string]string{}}
}

// Name returns "livechart".
func (t *Tracker) Name() string { return Name }

// RequiresLoggingDirectory returns false.
func (t *Tracker) RequiresLoggingDirectory() bool { return false }

// MainProcessOnly returns true: one chart per run, drawn by the main process.
func (t *Tracker) MainProcessOnly() bool { return true }

// Tracker returns the *Tracker itself.
func (t *Tracker) Tracker() any { return t }

// Start starts the drawing goroutine.
func (t *Tracker) Start() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.started {
		return nil
	}
	t.started = true
	t.kick = make(chan struct{}, 1)
	t.stopc, t.done = make(chan struct{}), make(chan struct{})
	go t.drawLoop()
	return nil
}

// StoreInitConfiguration does nothing: the chart shows metrics only.
func (t *Tracker) StoreInitConfiguration(map[string]any) error { return nil }

// Log adds numbers (one chart each) and maps of numbers (one chart, a line
// per member) at step; NoStep places a value at its line's sequence index.
// Strings appear in the table of latest values; other values are skipped
// with a warning naming the key.
func (t *Tracker) Log(vals map[string]any, step int, kwargs map[string]any) error {
	t.mu.Lock()
	if !t.started || t.finished {
		t.mu.Unlock()
		if !t.started {
			return errors.New("livechart: the tracker is not started (call Start first)")
		}
		return errors.New("livechart: the tracker is finished")
	}
	if step != values.NoStep {
		t.lastStep = int64(step)
	}
	// Keys in sorted order, so that the charts of the first Log call (and
	// the rows of the table) come in the same order on every run.
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := vals[k]
		if f, ok := values.Float(v); ok {
			t.add(k, k, step, f)
			continue
		}
		switch values.Classify(v) {
		case values.Text:
			s, _ := values.String(v)
			t.texts[k] = s
		case values.Group:
			entries, _ := values.GroupEntries(v)
			for _, e := range entries {
				t.add(k, e.Key, step, e.Value)
			}
		default:
			t.warn.Unsupported(k, v, "numbers, strings and maps of numbers")
		}
	}
	t.version++
	t.mu.Unlock()
	select {
	case t.kick <- struct{}{}:
	default:
	}
	return nil
}

// add appends a point; callers hold t.mu.
func (t *Tracker) add(chartName, lineName string, step int, y float64) {
	c, ok := t.charts[chartName]
	if !ok {
		c = &chart{name: chartName, lines: map[string]*line{}}
		t.charts[chartName] = c
		t.order = append(t.order, chartName)
	}
	l, ok := c.lines[lineName]
	if !ok {
		l = &line{name: lineName, stride: 1}
		c.lines[lineName] = l
		c.order = append(c.order, lineName)
	}
	x := float64(step)
	if step == values.NoStep {
		x = float64(l.seen)
	}
	p := point{x, y}
	if l.seen%l.stride == 0 {
		l.pts = append(l.pts, p)
		if len(l.pts) >= t.opts.MaxPoints {
			n := 0
			for i := 0; i < len(l.pts); i += 2 {
				l.pts[n] = l.pts[i]
				n++
			}
			l.pts = l.pts[:n]
			l.stride *= 2
		}
	}
	l.seen++
	l.last = p
}

func (t *Tracker) drawLoop() {
	defer close(t.done)
	for {
		select {
		case <-t.stopc:
			return
		case <-t.kick:
		}
		if wait := t.opts.Interval - time.Since(t.lastDraw); wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-t.stopc:
				timer.Stop()
				return
			case <-timer.C:
			}
		}
		t.draw(false)
	}
}

// draw renders and shows the current state when it changed since the last
// draw, or always when force is set. Only the drawing goroutine calls it,
// then Finish after that goroutine has ended, so handle needs no lock.
func (t *Tracker) draw(force bool) {
	t.mu.Lock()
	if t.version == t.drawn && !force {
		t.mu.Unlock()
		return
	}
	t.drawn = t.version
	b := t.bundle(t.finished)
	t.mu.Unlock()
	if t.handle == nil {
		t.handle = display.Display(b)
	} else {
		t.handle.Update(b)
	}
	t.lastDraw = time.Now()
}

// Finish stops the drawing goroutine and draws the final state (when
// anything was logged). Idempotent.
func (t *Tracker) Finish() error {
	t.mu.Lock()
	if !t.started || t.finished {
		t.mu.Unlock()
		return nil
	}
	t.finished = true
	logged := t.version > 0
	t.mu.Unlock()
	close(t.stopc)
	<-t.done
	if logged {
		t.draw(true)
	}
	return nil
}

// Handle returns the display handle (nil until the first draw).
func (t *Tracker) Handle() *display.Handle {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.finished {
		return nil // owned by the drawing goroutine until Finish
	}
	return t.handle
}

// Latest returns the latest value of every line ("chart" or "chart/member").
func (t *Tracker) Latest() map[string]float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]float64{}
	for _, c := range t.charts {
		for _, l := range c.lines {
			out[lineKey(c, l)] = l.last.y
		}
	}
	return out
}

// Bundle renders the current state as the MIME bundle the display shows.
func (t *Tracker) Bundle() frontend.MIMEBundle {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.bundle(t.finished)
}

func lineKey(c *chart, l *line) string {
	if len(c.lines) == 1 && l.name == c.name {
		return c.name
	}
	return c.name + "/" + l.name
}

// Layout of the chart grid.
const (
	chartW, chartH = 320, 200
	cols           = 3
	gap            = 10
	padL, padR     = 52, 10
	padT, padB     = 26, 22
)

var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}

// bundle renders; callers hold t.mu.
func (t *Tracker) bundle(final bool) frontend.MIMEBundle {
	names := append([]string(nil), t.order...)
	charts := make([]string, len(names))
	for i, n := range names {
		charts[i] = t.chartSVG(t.charts[n])
	}
	status := "running"
	if final {
		status = "finished"
	}
	title := t.opts.Title
	if title == "" {
		title = "training"
	}
	heading := fmt.Sprintf("%s — step %d (%s)", title, t.lastStep, status)

	// image/svg+xml: the grid as one document.
	rows := (len(charts) + cols - 1) / cols
	ncol := min(len(charts), cols)
	w := max(ncol*(chartW+gap)-gap, chartW)
	h := 24 + max(rows, 1)*(chartH+gap)
	var svg strings.Builder
	fmt.Fprintf(&svg, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif">`, w, h, w, h)
	fmt.Fprintf(&svg, `<text x="0" y="16" font-size="14" font-weight="bold">%s</text>`, esc(heading))
	for i, c := range charts {
		x, y := (i%cols)*(chartW+gap), 24+(i/cols)*(chartH+gap)
		fmt.Fprintf(&svg, `<g transform="translate(%d,%d)">%s</g>`, x, y, c)
	}
	svg.WriteString(`</svg>`)

	// text/html: inline SVGs in a wrapping grid, then the table.
	var html strings.Builder
	fmt.Fprintf(&html, `<div class="goaccel-livechart"><div style="font-weight:bold;margin:2px 0 6px">%s</div><div style="display:flex;flex-wrap:wrap;gap:%dpx">`, esc(heading), gap)
	for _, c := range charts {
		fmt.Fprintf(&html, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif">%s</svg>`, chartW, chartH, chartW, chartH, c)
	}
	html.WriteString(`</div><table style="margin-top:6px"><thead><tr><th style="text-align:left">metric</th><th style="text-align:left">latest</th></tr></thead><tbody>`)
	var text strings.Builder
	fmt.Fprintf(&text, "%s\n", heading)
	for _, row := range t.tableRows() {
		fmt.Fprintf(&html, `<tr><td style="text-align:left">%s</td><td style="text-align:left">%s</td></tr>`, esc(row[0]), esc(row[1]))
		fmt.Fprintf(&text, "%s: %s\n", row[0], row[1])
	}
	html.WriteString(`</tbody></table></div>`)
	return frontend.MIMEBundle{"text/html": html.String(), "image/svg+xml": svg.String(), "text/plain": strings.TrimRight(text.String(), "\n")}
}

// tableRows lists latest values, charts first (in logging order), then texts.
func (t *Tracker) tableRows() [][2]string {
	var rows [][2]string
	for _, n := range t.order {
		c := t.charts[n]
		for _, ln := range c.order {
			l := c.lines[ln]
			rows = append(rows, [2]string{lineKey(c, l), fmtNum(l.last.y)})
		}
	}
	keys := make([]string, 0, len(t.texts))
	for k := range t.texts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		rows = append(rows, [2]string{k, t.texts[k]})
	}
	return rows
}

func fmtNum(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', 6, 64)
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

// chartSVG draws one chart's content (no outer <svg>) in chartW×chartH.
func (t *Tracker) chartSVG(c *chart) string {
	// Gather the drawn points of every line (plus its latest point).
	type drawn struct {
		l   *line
		pts []point
	}
	var lines []drawn
	minX, maxX, minY, maxY := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, ln := range c.order {
		l := c.lines[ln]
		pts := l.pts
		if n := len(pts); n == 0 || pts[n-1] != l.last {
			pts = append(pts[:n:n], l.last)
		}
		for _, p := range pts {
			if isFinite(p.x) && isFinite(p.y) {
				minX, maxX = math.Min(minX, p.x), math.Max(maxX, p.x)
				minY, maxY = math.Min(minY, p.y), math.Max(maxY, p.y)
			}
		}
		lines = append(lines, drawn{l, pts})
	}
	if math.IsInf(minX, 1) { // no finite point
		minX, maxX, minY, maxY = 0, 1, 0, 1
	}
	if maxX == minX {
		minX, maxX = minX-0.5, maxX+0.5
	}
	if maxY == minY {
		d := math.Max(math.Abs(minY)*0.05, 0.5)
		minY, maxY = minY-d, maxY+d
	}
	pw, ph := float64(chartW-padL-padR), float64(chartH-padT-padB)
	sx := func(x float64) float64 { return float64(padL) + (x-minX)/(maxX-minX)*pw }
	sy := func(y float64) float64 { return float64(padT) + (maxY-y)/(maxY-minY)*ph }

	var b strings.Builder
	fmt.Fprintf(&b, `<rect x="0.5" y="0.5" width="%d" height="%d" fill="white" stroke="#ddd"/>`, chartW-1, chartH-1)
	title := c.name
	if len(c.lines) == 1 {
		for _, l := range c.lines {
			title += " = " + fmtNum(l.last.y)
		}
	}
	fmt.Fprintf(&b, `<text x="%d" y="16" font-size="12" font-weight="bold">%s</text>`, padL, esc(title))
	// y: light grid lines at round values, labelled on the left.
	for _, v := range ticks(minY, maxY, 4) {
		y := sy(v)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>`, padL, y, chartW-padR, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" font-size="10" fill="#555" text-anchor="end">%s</text>`, padL-4, y+3, esc(fmtTick(v)))
	}
	// x: steps at round values below the axis.
	for _, v := range ticks(minX, maxX, 5) {
		if v != math.Trunc(v) {
			continue // steps are whole numbers
		}
		x := sx(v)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999"/>`, x, chartH-padB, x, chartH-padB+3)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="10" fill="#555" text-anchor="middle">%s</text>`, x, chartH-padB+13, esc(fmtTick(v)))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="10" fill="#555" text-anchor="end">step</text>`, chartW-padR, chartH-3)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999"/>`, padL, padT, padL, chartH-padB)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999"/>`, padL, chartH-padB, chartW-padR, chartH-padB)
	for i, d := range lines {
		color := palette[i%len(palette)]
		var pts strings.Builder
		for _, p := range d.pts {
			if !isFinite(p.x) || !isFinite(p.y) {
				continue
			}
			if pts.Len() > 0 {
				pts.WriteByte(' ')
			}
			pts.WriteString(strconv.FormatFloat(sx(p.x), 'f', 1, 64))
			pts.WriteByte(',')
			pts.WriteString(strconv.FormatFloat(sy(p.y), 'f', 1, 64))
		}
		fmt.Fprintf(&b, `<polyline data-metric="%s" fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`, esc(lineKey(c, d.l)), color, pts.String())
		if len(c.lines) > 1 {
			fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="10" fill="%s" text-anchor="end">%s = %s</text>`, chartW-padR, padT+10+12*i, color, esc(d.l.name), esc(fmtNum(d.l.last.y)))
		}
	}
	return b.String()
}

func isFinite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// ticks returns about n round values (steps of 1, 2 or 5 times a power of
// ten) within [lo, hi].
func ticks(lo, hi float64, n int) []float64 {
	if !(hi > lo) || !isFinite(lo) || !isFinite(hi) || n < 1 {
		return nil
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []float64
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		// snap away float noise (0.30000000000000004)
		out = append(out, math.Round(v/step)*step)
	}
	return out
}

// fmtTick formats a tick value compactly.
func fmtTick(f float64) string {
	if f == 0 {
		return "0"
	}
	if a := math.Abs(f); a >= 1e6 || a < 1e-3 {
		return strconv.FormatFloat(f, 'g', 3, 64)
	}
	return strconv.FormatFloat(f, 'g', 6, 64)
}
