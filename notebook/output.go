package notebook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/goaccel/goaccel/frontend"
)

// coalesceDelay bounds how long output waits before it is streamed.
const (
	coalesceDelay = 20 * time.Millisecond
	coalesceMax   = 32 * 1024
)

// streamer coalesces writes to "stdout" and "stderr" and forwards them to the
// current destination. Order across the two streams is kept: a write to the
// other stream flushes the pending text first.
type streamer struct {
	mu    sync.Mutex
	dest  frontend.Publisher
	name  string
	buf   []byte
	timer *time.Timer
}

func newStreamer() *streamer { return &streamer{} }

// setDest flushes pending text to the old destination and switches.
func (s *streamer) setDest(p frontend.Publisher) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLocked(true)
	s.dest = p
}

func (s *streamer) write(name string, p []byte) {
	if len(p) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.name != name && len(s.buf) > 0 {
		s.flushLocked(true)
	}
	s.name = name
	s.buf = append(s.buf, p...)
	if len(s.buf) >= coalesceMax {
		s.flushLocked(false)
		return
	}
	if s.timer == nil {
		s.timer = time.AfterFunc(coalesceDelay, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.timer = nil
			s.flushLocked(false)
		})
	}
}

// flush sends everything pending.
func (s *streamer) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLocked(true)
}

// flushLocked sends the buffer; unless all, an incomplete UTF-8 sequence at
// the end stays for the next write.
func (s *streamer) flushLocked(all bool) {
	if s.timer != nil && all {
		s.timer.Stop()
		s.timer = nil
	}
	if len(s.buf) == 0 {
		return
	}
	n := len(s.buf)
	if !all {
		n = completeUTF8(s.buf)
	}
	if n == 0 {
		return
	}
	text := string(s.buf[:n])
	rest := copy(s.buf, s.buf[n:])
	s.buf = s.buf[:rest]
	if s.dest != nil {
		s.dest.Stream(s.name, text)
	}
}

// completeUTF8 returns the length of b without a trailing incomplete rune.
func completeUTF8(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return i
			}
			break
		}
	}
	return len(b)
}

// streamWriter is an io.Writer onto one stream of a streamer.
type streamWriter struct {
	s    *streamer
	name string
}

func (w streamWriter) Write(p []byte) (int, error) {
	w.s.write(w.name, p)
	return len(p), nil
}

// panicLine matches the lines yaegi writes to its stderr for each frame a
// panic unwinds: "cell[3]/_.go:2:5: panic: main.f(...)".
var panicLine = regexp.MustCompile(`^(\S*?_\.go):(\d+):(\d+): panic(: .*)?\n?$`)

// stderrWriter is the interpreter's stderr: it diverts yaegi's panic frame
// lines into the running cell's traceback instead of streaming them.
type stderrWriter struct {
	e *Engine
}

func (w stderrWriter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(": panic")) && panicLine.Match(p) {
		if cs := w.e.currentCell(); cs != nil {
			cs.addTrace(string(bytes.TrimRight(p, "\n")))
			return len(p), nil
		}
	}
	w.e.out.write("stderr", p)
	return len(p), nil
}

// stdinReader gives cells the frontend's input: each Read that finds its
// buffer empty asks the running cell's CellIO for one line.
type stdinReader struct {
	e   *Engine
	mu  sync.Mutex
	buf []byte
}

func (r *stdinReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.buf) == 0 {
		cs := r.e.currentCell()
		if cs == nil || !cs.running() {
			return 0, io.EOF
		}
		line, err := cs.ask("", false)
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return 0, io.EOF
			}
			return 0, err
		}
		r.buf = append(r.buf, line...)
		r.buf = append(r.buf, '\n')
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// reset drops buffered input (a new cell starts clean).
func (r *stdinReader) reset() {
	r.mu.Lock()
	r.buf = nil
	r.mu.Unlock()
}

// errStdin wraps a refused input request.
func errStdin(err error) error { return fmt.Errorf("notebook: reading input: %w", err) }
