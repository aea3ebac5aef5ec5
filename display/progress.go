package display

import (
	"fmt"
	"html"
	"strings"
	"sync"
	"time"

	"github.com/goaccel/goaccel/frontend"
)

// Progress is a progress bar drawn under the cell and updated in place.
// Updates are throttled so a tight loop calling Add does not flood the
// frontend; Done always draws the final state.
type Progress struct {
	mu       sync.Mutex
	handle   *Handle
	label    string
	note     string // shown after the counts (SetNote)
	total    int
	n        int
	started  time.Time
	lastDraw time.Time
	interval time.Duration
}

// NewProgress shows a bar for total steps with a label.
func NewProgress(label string, total int) *Progress {
	p := &Progress{label: label, total: total, started: time.Now(), interval: 100 * time.Millisecond}
	p.handle = Display(p.bundle())
	p.lastDraw = time.Now()
	return p
}

// Add advances the bar by n steps.
func (p *Progress) Add(n int) { p.move(func(cur int) int { return cur + n }) }

// Set moves the bar to n steps.
func (p *Progress) Set(n int) { p.move(func(int) int { return n }) }

// move sets the step count to next(current) in one critical section (so
// concurrent Adds are not lost) and redraws unless throttled; a throttled
// move renders nothing.
func (p *Progress) move(next func(int) int) {
	p.mu.Lock()
	p.n = next(p.n)
	if time.Since(p.lastDraw) < p.interval && p.n < p.total {
		p.mu.Unlock()
		return
	}
	p.lastDraw = time.Now()
	b := p.bundle()
	p.mu.Unlock()
	p.handle.Update(b)
}

// SetNote sets a short text shown after the counts (the latest loss, say);
// it is drawn with the next move.
func (p *Progress) SetNote(note string) {
	p.mu.Lock()
	p.note = note
	p.mu.Unlock()
}

// Done draws the final state.
func (p *Progress) Done() {
	p.mu.Lock()
	b := p.bundle()
	p.mu.Unlock()
	p.handle.Update(b)
}

// bundle renders the bar; callers hold p.mu (or own p exclusively).
func (p *Progress) bundle() frontend.MIMEBundle {
	frac := 0.0
	if p.total > 0 {
		frac = float64(p.n) / float64(p.total)
	}
	frac = min(max(frac, 0), 1)
	elapsed := time.Since(p.started).Truncate(100 * time.Millisecond)
	const width = 30
	filled := int(frac * width)
	note := ""
	if p.note != "" {
		note = " " + p.note
	}
	text := fmt.Sprintf("%s [%s%s] %d/%d %3.0f%% %s%s", p.label,
		strings.Repeat("#", filled), strings.Repeat(".", width-filled), p.n, p.total, frac*100, elapsed, note)
	htmlBar := fmt.Sprintf(`<div style="font-family:monospace">%s <progress value="%d" max="%d" style="width:20em"></progress> %d/%d (%.0f%%) %s%s</div>`,
		html.EscapeString(p.label), p.n, p.total, p.n, p.total, frac*100, elapsed, html.EscapeString(note))
	return frontend.MIMEBundle{"text/plain": text, "text/html": htmlBar}
}
