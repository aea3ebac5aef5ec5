package launcher

import (
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/goaccel/goaccel/frontend"
)

// roleName is torchelastic's default role, ${role_name} in the prefix.
const roleName = "default"

// expandPrefix fills ${rank}, ${local_rank}, ${node_rank} and ${role_name}
// in tmpl (other text, including unknown ${...}, is kept as is, like
// Python's Template.safe_substitute).
func expandPrefix(tmpl string, rank, localRank, nodeRank int) string {
	return strings.NewReplacer(
		"${rank}", strconv.Itoa(rank),
		"${local_rank}", strconv.Itoa(localRank),
		"${node_rank}", strconv.Itoa(nodeRank),
		"${role_name}", roleName,
	).Replace(tmpl)
}

const (
	readChunk    = 32 << 10
	maxLineBytes = 64 << 10 // a longer line is published in pieces
	stderrTail   = 20       // lines kept for ChildFailedError.LastStderr
)

// pumpLines reads r until EOF and publishes what it reads on stream name,
// line by line (a line ends at \n or \r, so progress bars that redraw with
// \r stay live), each line prefixed. Complete lines read together are
// published in one Stream call; a partial line waits for its end (or EOF,
// or maxLineBytes). tail, if non-nil, receives every line without prefix.
func pumpLines(r io.Reader, pub frontend.Publisher, name, prefix string, tail *lineTail) {
	buf := make([]byte, readChunk)
	var pending []byte // partial line
	var out strings.Builder
	flush := func() {
		if out.Len() > 0 {
			pub.Stream(name, out.String())
			out.Reset()
		}
	}
	emit := func(line []byte) { // line includes its terminator, if any
		out.WriteString(prefix)
		out.Write(line)
		if tail != nil {
			tail.add(strings.TrimRight(string(line), "\r\n"))
		}
	}
	for {
		n, err := r.Read(buf)
		pending = append(pending, buf[:n]...)
		rest := pending
		for {
			i := indexLineEnd(rest)
			if i < 0 {
				break
			}
			emit(rest[:i+1])
			rest = rest[i+1:]
		}
		if len(rest) >= maxLineBytes || (err != nil && len(rest) > 0) {
			emit(rest)
			rest = nil
		}
		pending = append(pending[:0], rest...)
		flush()
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				log.WithError(err).Debug("launcher: reading worker output")
			}
			return
		}
	}
}

// indexLineEnd returns the index of the last byte of the first line in b
// (its \n, its \r, or the \n of \r\n), or -1 when b holds no complete
// line. A trailing \r is undecided (\r\n may be split across reads).
func indexLineEnd(b []byte) int {
	for i, c := range b {
		switch c {
		case '\n':
			return i
		case '\r':
			if i+1 == len(b) {
				return -1
			}
			if b[i+1] == '\n' {
				return i + 1
			}
			return i
		}
	}
	return -1
}

// lineTail keeps the last lines of a stream, and the first line that
// reports a Go runtime panic or fatal error.
type lineTail struct {
	mu    sync.Mutex
	lines []string
	max   int
	first string // guarded by mu
}

func (t *lineTail) add(l string) {
	if l == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.first == "" && (strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ")) {
		t.first = l
	}
	t.lines = append(t.lines, l)
	if len(t.lines) > t.max {
		t.lines = append(t.lines[:0:0], t.lines[len(t.lines)-t.max:]...)
	}
}

func (t *lineTail) get() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.lines...)
}

// report returns the first panic or fatal error line, if any.
func (t *lineTail) report() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.first
}
