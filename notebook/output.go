package notebook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sync"

	"github.com/goaccel/goaccel/frontend"
)

// streamer forwards what cells write to "stdout" and "stderr" to the
// current destination: the running cell's CellIO, or the most recently
// started cell's for goroutines that outlive their cell. It does not buffer:
// the destination coalesces (the kernel's publisher batches stream text and
// sends it before any other output, keeping the order).
type streamer struct {
	mu   sync.Mutex
	dest frontend.Publisher
}

func newStreamer() *streamer { return &streamer{} }

// setDest switches the destination.
func (s *streamer) setDest(p frontend.Publisher) {
	s.mu.Lock()
	s.dest = p
	s.mu.Unlock()
}

func (s *streamer) write(name string, p []byte) {
	if len(p) == 0 {
		return
	}
	s.mu.Lock()
	dest := s.dest
	s.mu.Unlock()
	if dest != nil {
		dest.Stream(name, string(p))
	}
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
