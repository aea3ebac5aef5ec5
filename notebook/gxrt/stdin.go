package gxrt

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// Standard input of cells: gen makes cell code read os.Stdin through
// Stdin (where it is used as an io.Reader) and fmt.Scan, Scanln and Scanf
// through this package's; Stdin asks the engine (Hooks.Input) for a line
// each time its buffer is empty, which the engine turns into a Jupyter
// input_request. Input is requested when the cell reads, never ahead.

// ErrInterrupted is what Hooks.Input returns when the cell was
// interrupted while it waited for input.
var ErrInterrupted = errors.New("interrupted")

// Stdin is what cells read as os.Stdin. Like os.Stdin, it is no
// io.RuneScanner: fmt's scanning functions read one byte past what they
// scan (the line break after fmt.Scan's last word), as they do in a Go
// program reading a terminal.
var Stdin io.Reader = stdin

var stdin = &stdinReader{}

type stdinReader struct {
	mu  sync.Mutex
	buf []byte
	off int
}

// ResetStdin drops buffered input (a new cell starts with none).
func ResetStdin() {
	stdin.mu.Lock()
	stdin.buf, stdin.off = nil, 0
	stdin.mu.Unlock()
}

// fill makes sure the buffer has bytes. Callers hold r.mu; fill releases
// it while it waits for an interrupt.
func (r *stdinReader) fill() error {
	if r.off < len(r.buf) {
		return nil
	}
	h := current()
	if h.Input == nil {
		return io.EOF
	}
	line, err := h.Input()
	if errors.Is(err, ErrInterrupted) {
		r.mu.Unlock()
		defer r.mu.Lock()
		return awaitStop()
	}
	if err != nil {
		return err
	}
	r.buf = append(append(r.buf[:0], line...), '\n')
	r.off = 0
	return nil
}

// awaitStop waits for the stop of an interrupted cell (the input request
// ends as the interrupt comes, the stop follows) and returns io.EOF when
// the calling goroutine is not stopped.
func awaitStop() error {
	deadline := time.NewTimer(StopGrace)
	defer deadline.Stop()
	for {
		w := wakeCh()
		checkAny()
		select {
		case <-w:
			checkSlow()
		case <-deadline.C:
			return io.EOF
		}
	}
}

func (r *stdinReader) Read(p []byte) (int, error) {
	checkAny()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(p) == 0 {
		return 0, nil
	}
	if err := r.fill(); err != nil {
		return 0, err
	}
	n := copy(p, r.buf[r.off:])
	r.off += n
	return n, nil
}

// Scan is fmt.Scan.
func Scan(a ...any) (int, error) { return fmt.Fscan(stdin, a...) }

// Scanln is fmt.Scanln.
func Scanln(a ...any) (int, error) { return fmt.Fscanln(stdin, a...) }

// Scanf is fmt.Scanf.
func Scanf(format string, a ...any) (int, error) { return fmt.Fscanf(stdin, format, a...) }
