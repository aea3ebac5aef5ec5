package livechart

import (
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goaccel/goaccel/display"
	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/tracking/values"
)

type call struct {
	update bool
	id     string
	data   frontend.MIMEBundle
	at     time.Time
}

// fakePublisher records display calls.
type fakePublisher struct {
	mu    sync.Mutex
	calls []call
}

func (f *fakePublisher) Stream(string, string) {}
func (f *fakePublisher) ClearOutput(bool)      {}
func (f *fakePublisher) Display(d frontend.MIMEBundle, _ map[string]any, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call{false, id, d, time.Now()})
}
func (f *fakePublisher) UpdateDisplay(d frontend.MIMEBundle, _ map[string]any, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call{true, id, d, time.Now()})
}
func (f *fakePublisher) snapshot() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

func install(t *testing.T) *fakePublisher {
	p := &fakePublisher{}
	restore := display.SetSink(p)
	t.Cleanup(restore)
	return p
}

func started(t *testing.T, opts Options) *Tracker {
	tr := Open(opts)
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	return tr
}

// checkOneDisplay asserts one Display followed only by updates of its id.
func checkOneDisplay(t *testing.T, calls []call) {
	t.Helper()
	if len(calls) == 0 || calls[0].update {
		t.Fatalf("first call is not a Display: %d calls", len(calls))
	}
	for i, c := range calls[1:] {
		if !c.update || c.id != calls[0].id {
			t.Fatalf("call %d: update=%v id=%s, want update of %s", i+1, c.update, c.id, calls[0].id)
		}
	}
}

func TestThrottleTightLoop(t *testing.T) {
	p := install(t)
	tr := started(t, Options{Title: "run"})
	start := time.Now()
	for i := 0; i < 10000; i++ {
		if err := tr.Log(map[string]any{"loss": 1 / float64(i+1), "acc": float64(i) / 10000, "lr": map[string]float64{"a": 1, "b": 2}}, i, nil); err != nil {
			t.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	if err := tr.Finish(); err != nil {
		t.Fatal(err)
	}
	calls := p.snapshot()
	checkOneDisplay(t, calls)
	// At most one draw per 250 ms while logging, plus the first and the final one.
	if limit := int(elapsed/(200*time.Millisecond)) + 3; len(calls) > limit {
		t.Errorf("%d display calls for a %v loop, want ≤ %d", len(calls), elapsed, limit)
	}
	final := calls[len(calls)-1].data
	svg, _ := final["image/svg+xml"].(string)
	html, _ := final["text/html"].(string)
	for _, m := range []string{"loss", "acc", "lr/a", "lr/b"} {
		re := regexp.MustCompile(`<polyline data-metric="` + regexp.QuoteMeta(m) + `"[^>]* points="([^"]+)"`)
		for name, doc := range map[string]string{"svg": svg, "html": html} {
			mm := re.FindStringSubmatch(doc)
			if mm == nil || len(strings.Fields(mm[1])) < 100 {
				t.Errorf("%s: no polyline with points for %s", name, m)
			}
		}
	}
	if !strings.Contains(html, "<td style=\"text-align:left\">loss</td><td style=\"text-align:left\">0.0001</td>") {
		t.Errorf("final table lacks the latest loss:\n%s", html)
	}
	if !strings.Contains(html, "(finished)") || !strings.Contains(final["text/plain"].(string), "acc: 0.9999") {
		t.Errorf("final render not marked finished or text wrong: %v", final["text/plain"])
	}
	if !strings.HasPrefix(svg, `<svg xmlns="http://www.w3.org/2000/svg"`) {
		t.Errorf("image/svg+xml is not an SVG document: %.80s", svg)
	}
}

// TestThrottleRate logs without pause until three draws were made (however
// slow the machine): the draws are at least 200 ms apart, so at most one per
// 200 ms of logging (plus the first, immediate).
func TestThrottleRate(t *testing.T) {
	p := install(t)
	tr := started(t, Options{})
	defer tr.Finish()
	start := time.Now()
	n := 0
	for len(p.snapshot()) < 3 {
		if time.Since(start) > 5*time.Minute {
			t.Fatalf("%d draws after %d logs in 5 min", len(p.snapshot()), n)
		}
		if err := tr.Log(map[string]any{"x": float64(n)}, n, nil); err != nil {
			t.Fatal(err)
		}
		n++
		if n%10 == 0 {
			time.Sleep(100 * time.Microsecond)
		}
	}
	elapsed := time.Since(start)
	calls := p.snapshot()
	checkOneDisplay(t, calls)
	if limit := int(elapsed/(200*time.Millisecond)) + 2; len(calls) > limit {
		t.Errorf("%d draws in %v of logging (%d logs), want at most %d", len(calls), elapsed, n, limit)
	}
	for i := 1; i < len(calls); i++ {
		if d := calls[i].at.Sub(calls[i-1].at); d < 200*time.Millisecond {
			t.Errorf("draws %d and %d only %v apart", i-1, i, d)
		}
	}
}

func TestLastValuesDrawnWhenLoggingStops(t *testing.T) {
	p := install(t)
	tr := started(t, Options{})
	defer tr.Finish()
	for i := 0; i < 5; i++ {
		tr.Log(map[string]any{"loss": float64(i) + 0.5}, i, nil)
	}
	// No more logging, no Finish: a draw shows the last value once the
	// throttle allows (a draw that never comes fails after 5 min).
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		calls := p.snapshot()
		if len(calls) > 0 && strings.Contains(calls[len(calls)-1].data["text/plain"].(string), "loss: 4.5") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no draw shows the last value: %d draws", len(calls))
		}
	}
}

func TestNoStepUsesSequenceIndexAndWarns(t *testing.T) {
	install(t)
	tr := started(t, Options{MaxPoints: 8})
	for i := 0; i < 100; i++ {
		tr.Log(map[string]any{"x": float64(i), "note": "hello", "bad": []int{1}}, values.NoStep, nil)
	}
	tr.Finish()
	c := tr.charts["x"]
	l := c.lines["x"]
	if l.last != (point{99, 99}) || len(l.pts) >= 8 || l.pts[0] != (point{0, 0}) {
		t.Errorf("line x: last %v, %d kept points %v", l.last, len(l.pts), l.pts)
	}
	for i := 1; i < len(l.pts); i++ {
		if l.pts[i].x <= l.pts[i-1].x {
			t.Fatalf("decimated points out of order: %v", l.pts)
		}
	}
	if b := tr.Bundle()["text/plain"].(string); !strings.Contains(b, "note: hello") || strings.Contains(b, "bad") {
		t.Errorf("table: %q", b)
	}
}

func TestNoSinkIsHarmless(t *testing.T) {
	restore := display.SetSink(nil)
	defer restore()
	tr := started(t, Options{})
	tr.Log(map[string]any{"x": 1}, 1, nil)
	if err := tr.Finish(); err != nil {
		t.Fatal(err)
	}
	if err := tr.Log(map[string]any{"x": 1}, 2, nil); err == nil {
		t.Error("Log after Finish succeeded")
	}
}

func TestTicks(t *testing.T) {
	cases := []struct {
		lo, hi float64
		n      int
		want   string
	}{
		{0, 49, 5, "0 10 20 30 40"},
		{0.235, 2.05, 4, "0.5 1 1.5 2"},
		{0, 0.3, 3, "0 0.1 0.2 0.3"},
		{-1, 1, 4, "-1 -0.5 0 0.5 1"},
		{1e-5, 5e-5, 4, "1e-05 2e-05 3e-05 4e-05 5e-05"},
		{1, 1, 4, ""},
	}
	for _, c := range cases {
		var got []string
		for _, v := range ticks(c.lo, c.hi, c.n) {
			got = append(got, fmtTick(v))
		}
		if s := strings.Join(got, " "); s != c.want {
			t.Errorf("ticks(%v, %v, %d) = %q, want %q", c.lo, c.hi, c.n, s, c.want)
		}
	}
}

func TestChartOrderIsStable(t *testing.T) {
	for range 5 {
		tr := Open(Options{})
		if err := tr.Start(); err != nil {
			t.Fatal(err)
		}
		if err := tr.Log(map[string]any{"zeta": 1, "alpha": 2, "mid": map[string]float64{"y": 1, "x": 2}}, 0, nil); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(tr.order, " "); got != "alpha mid zeta" {
			t.Fatalf("charts in order %q, want sorted keys of the first Log", got)
		}
		_ = tr.Finish()
	}
}
