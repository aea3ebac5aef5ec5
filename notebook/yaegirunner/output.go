package yaegirunner

import (
	"bytes"
	"context"
	"errors"
	"io"
	"regexp"
	"sync"
)

// panicLine matches the lines yaegi writes to its stderr for each frame a
// panic unwinds: "cell[3]/_.go:2:5: panic: main.f(...)".
var panicLine = regexp.MustCompile(`^(\S*?_\.go):(\d+):(\d+): panic(: .*)?\n?$`)

// stderrWriter is the interpreter's stderr: it diverts yaegi's panic frame
// lines into the running cell's traceback instead of streaming them.
type stderrWriter struct {
	r *Runner
}

func (w stderrWriter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(": panic")) && panicLine.Match(p) {
		if cs := w.r.state(); cs != nil {
			cs.addTrace(string(bytes.TrimRight(p, "\n")))
			return len(p), nil
		}
	}
	w.r.out.Write("stderr", p)
	return len(p), nil
}

// stdinReader gives cells the frontend's input: each Read that finds its
// buffer empty asks the running cell's CellIO for one line.
type stdinReader struct {
	r   *Runner
	mu  sync.Mutex
	buf []byte
}

func (s *stdinReader) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.buf) == 0 {
		c := s.r.cells.Cell()
		if c == nil || !c.Running() {
			return 0, io.EOF
		}
		line, err := c.AskStdin()
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return 0, io.EOF
			}
			return 0, err
		}
		s.buf = append(s.buf, line...)
		s.buf = append(s.buf, '\n')
	}
	n := copy(p, s.buf)
	s.buf = s.buf[n:]
	return n, nil
}

// reset drops buffered input (a new cell starts clean).
func (s *stdinReader) reset() {
	s.mu.Lock()
	s.buf = nil
	s.mu.Unlock()
}
