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
	"errors"
	"io"
	"os"
	"sync"
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

// pump forwards r to the current Output until r is closed.
func (c *Capture) pump(stream string, r io.ReadCloser) {
	defer c.wg.Done()
	defer r.Close()
	buf := make([]byte, 32*1024)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			p := make([]byte, n)
			copy(p, buf[:n])
			c.emit(stream, p)
		}
		if err != nil {
			return
		}
	}
}
