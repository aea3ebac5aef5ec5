// Package fdcapture redirects the process's file descriptors 1 and 2 to pipes
// so that everything written to them — os.Stdout and os.Stderr writes from
// notebook cells, output of compiled packages, C libraries and the Go runtime
// — can be forwarded to the running cell instead of the kernel's own
// terminal or log.
//
// The kernel must not write its own logs to fd 2 after Redirect: it should
// log to OriginalStderr (a duplicate of the stderr the process started with).
// Redirect also points the Go runtime's crash output (runtime/debug
// SetCrashOutput) at the original stderr, so a fatal error in the kernel is
// not lost in a pipe nobody reads any more.
package fdcapture

import (
	"bytes"
	"errors"
	"io"
	"os"
	"sync"
	"time"
)

// Output receives what was written to fd 1 ("stdout") or fd 2 ("stderr").
// It is called from the capture's reader goroutines, one call at a time per
// stream.
type Output func(stream string, p []byte)

// Capture is an active redirection of fds 1 and 2.
type Capture struct {
	origOut, origErr *os.File
	wOut, wErr       *os.File
	rOut, rErr       *os.File
	wg               sync.WaitGroup

	mu     sync.Mutex
	out    Output
	closed bool

	drainMu sync.Mutex    // one Drain at a time
	marks   chan struct{} // a pump saw the drain marker
}

// drainMarker is written into both pipes by Drain. It is shorter than
// PIPE_BUF, so the kernel writes it in one piece, never interleaved with
// other writers' bytes; the pumps strip it from the output.
var drainMarker = []byte("\x00\x1bgoaccel-fdcapture-drain\x1b\x00")

// Drain waits until everything written to fds 1 and 2 before the call has
// been handed to the Output (at most timeout), so output written by compiled
// code just before a cell ends or shows a display keeps its place.
func (c *Capture) Drain(timeout time.Duration) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed || c.wOut == nil {
		return
	}
	c.drainMu.Lock()
	defer c.drainMu.Unlock()
	// forget acknowledgements of an earlier Drain that timed out
	for len(c.marks) > 0 {
		<-c.marks
	}
	sent := 0
	for _, w := range []*os.File{c.wOut, c.wErr} {
		if _, err := w.Write(drainMarker); err == nil {
			sent++
		}
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for ; sent > 0; sent-- {
		select {
		case <-c.marks:
		case <-deadline.C:
			return
		}
	}
}

// ErrUnsupported is returned by Redirect on platforms without dup2.
var ErrUnsupported = errors.New("fdcapture: fd redirection is not supported on this platform")

// OriginalStdout returns a duplicate of the process's original fd 1.
func (c *Capture) OriginalStdout() *os.File { return c.origOut }

// OriginalStderr returns a duplicate of the process's original fd 2: the
// place for the kernel's own logs.
func (c *Capture) OriginalStderr() *os.File { return c.origErr }

// SetOutput makes fn the destination of captured output (nil drops it) and
// returns the previous destination.
func (c *Capture) SetOutput(fn Output) Output {
	c.mu.Lock()
	defer c.mu.Unlock()
	prev := c.out
	c.out = fn
	return prev
}

func (c *Capture) emit(stream string, p []byte) {
	c.mu.Lock()
	fn := c.out
	c.mu.Unlock()
	if fn != nil {
		fn(stream, p)
	}
}

// pump forwards r to the current Output until r is closed, taking the drain
// markers out and acknowledging each once the bytes before it are emitted.
func (c *Capture) pump(stream string, r io.ReadCloser) {
	defer c.wg.Done()
	defer r.Close()
	buf := make([]byte, 32*1024)
	var pending []byte // bytes that may be the start of a marker
	for {
		n, err := r.Read(buf)
		if n > 0 {
			data := append(pending, buf[:n]...)
			pending = nil
			for {
				i := bytes.Index(data, drainMarker)
				if i < 0 {
					break
				}
				if i > 0 {
					c.emit(stream, append([]byte(nil), data[:i]...))
				}
				data = data[i+len(drainMarker):]
				c.ack()
			}
			// keep a possible marker prefix for the next read
			keep := markerPrefixLen(data)
			if out := data[:len(data)-keep]; len(out) > 0 {
				c.emit(stream, append([]byte(nil), out...))
			}
			if keep > 0 {
				pending = append([]byte(nil), data[len(data)-keep:]...)
			}
		}
		if err != nil {
			if len(pending) > 0 {
				c.emit(stream, pending)
			}
			return
		}
	}
}

func (c *Capture) ack() {
	select {
	case c.marks <- struct{}{}:
	default:
	}
}

// markerPrefixLen is the length of the longest suffix of p that is a proper
// prefix of drainMarker.
func markerPrefixLen(p []byte) int {
	for k := min(len(p), len(drainMarker)-1); k > 0; k-- {
		if bytes.Equal(p[len(p)-k:], drainMarker[:k]) {
			return k
		}
	}
	return 0
}
