package launcher

import (
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/goaccel/goaccel/frontend"
)

type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) Stream(_, text string) {
	r.mu.Lock()
	r.calls = append(r.calls, text)
	r.mu.Unlock()
}
func (r *recorder) Display(frontend.MIMEBundle, map[string]any, string)       {}
func (r *recorder) UpdateDisplay(frontend.MIMEBundle, map[string]any, string) {}
func (r *recorder) ClearOutput(bool)                                          {}

// chunks yields its pieces one Read at a time.
type chunks struct{ parts []string }

func (c *chunks) Read(p []byte) (int, error) {
	if len(c.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.parts[0])
	c.parts[0] = c.parts[0][n:]
	if c.parts[0] == "" {
		c.parts = c.parts[1:]
	}
	return n, nil
}

func TestPumpLines(t *testing.T) {
	r := &recorder{}
	tail := &lineTail{max: 2}
	long := strings.Repeat("x", maxLineBytes+10)
	pumpLines(&chunks{parts: []string{
		"a\nb", "c\r", "\nd\re", "\n", "panic: oh\n", long, "\n", "end",
	}}, r, "stderr", "P ", tail)
	got := strings.Join(r.calls, "|")
	want := strings.Join([]string{
		"P a\n", "P bc\r\nP d\r", "P e\n", "P panic: oh\n",
		"P " + long[:maxLineBytes], "P " + long[maxLineBytes:] + "\n", "P end",
	}, "|")
	if got != want {
		t.Errorf("published\n%.200q\nwant\n%.200q", got, want)
	}
	if l := tail.get(); len(l) != 2 || l[1] != "end" {
		t.Errorf("tail %q", l)
	}
	if tail.report() != "panic: oh" {
		t.Errorf("report %q", tail.report())
	}
}
