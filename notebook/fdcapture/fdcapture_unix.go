//go:build unix

package fdcapture

import (
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"golang.org/x/sys/unix"
)

// Redirect replaces fds 1 and 2 with pipes whose read ends are forwarded to
// the Output set with SetOutput. Call Restore to undo it.
func Redirect() (*Capture, error) {
	os.Stdout.Sync() //nolint:errcheck // best effort before the switch
	os.Stderr.Sync() //nolint:errcheck
	c := &Capture{marks: make(chan struct{}, 2)}
	dupOf := func(fd int, name string) (*os.File, error) {
		nfd, err := unix.Dup(fd)
		if err != nil {
			return nil, fmt.Errorf("fdcapture: dup(%d): %w", fd, err)
		}
		unix.CloseOnExec(nfd)
		return os.NewFile(uintptr(nfd), name), nil
	}
	var err error
	if c.origOut, err = dupOf(1, "original-stdout"); err != nil {
		return nil, err
	}
	if c.origErr, err = dupOf(2, "original-stderr"); err != nil {
		c.origOut.Close()
		return nil, err
	}
	rOut, wOut, err := os.Pipe()
	if err != nil {
		c.origOut.Close()
		c.origErr.Close()
		return nil, fmt.Errorf("fdcapture: pipe: %w", err)
	}
	rErr, wErr, err := os.Pipe()
	if err != nil {
		rOut.Close()
		wOut.Close()
		c.origOut.Close()
		c.origErr.Close()
		return nil, fmt.Errorf("fdcapture: pipe: %w", err)
	}
	if err := unix.Dup2(int(wOut.Fd()), 1); err != nil {
		return nil, fmt.Errorf("fdcapture: dup2 onto fd 1: %w", err)
	}
	if err := unix.Dup2(int(wErr.Fd()), 2); err != nil {
		_ = unix.Dup2(int(c.origOut.Fd()), 1)
		return nil, fmt.Errorf("fdcapture: dup2 onto fd 2: %w", err)
	}
	growPipe(wErr) // a fatal error's traceback must fit: see crashPipeSize
	c.wOut, c.wErr = wOut, wErr
	c.rOut, c.rErr = rOut, rErr
	_ = debug.SetCrashOutput(c.origErr, debug.CrashOptions{})
	c.wg.Add(2)
	go c.pump("stdout", rOut)
	go c.pump("stderr", rErr)
	return c, nil
}

// Restore puts the original fds 1 and 2 back, waits until everything written
// before has been forwarded, and closes the pipes. OriginalStdout and
// OriginalStderr stay open (the caller may still be logging to them).
func (c *Capture) Restore() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	os.Stdout.Sync() //nolint:errcheck
	os.Stderr.Sync() //nolint:errcheck
	var first error
	if err := unix.Dup2(int(c.origOut.Fd()), 1); err != nil {
		first = fmt.Errorf("fdcapture: restoring fd 1: %w", err)
	}
	if err := unix.Dup2(int(c.origErr.Fd()), 2); err != nil && first == nil {
		first = fmt.Errorf("fdcapture: restoring fd 2: %w", err)
	}
	c.wOut.Close()
	c.wErr.Close()
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
		// A child process still holds a write end: stop reading anyway.
		c.rOut.Close()
		c.rErr.Close()
		<-done
	}
	return first
}

// NullStdin puts /dev/null on fd 0. A kernel's standard input is its
// launcher's pipe, which nobody writes: code that reads fd 0 directly (a
// cell's os.Stdin kept as an *os.File, a compiled package) would wait for
// good; with /dev/null it reads end of file. Cells read the notebook's input
// through their own reader.
func NullStdin() error {
	f, err := os.Open(os.DevNull)
	if err != nil {
		return fmt.Errorf("fdcapture: %w", err)
	}
	defer f.Close()
	if err := unix.Dup2(int(f.Fd()), 0); err != nil {
		return fmt.Errorf("fdcapture: dup2 onto fd 0: %w", err)
	}
	return nil
}
