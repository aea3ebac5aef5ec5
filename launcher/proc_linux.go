//go:build linux

package launcher

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// readersGrace is how long the output readers may take to drain a worker's
// pipes after it exited before the pipes are closed under them.
const readersGrace = 2 * time.Second

// proc is one running worker process. Each worker is the leader of its own
// process group (Setpgid), so signals reach whatever it started too, and
// gets SIGKILL when the launching thread dies (Pdeathsig): a kill -9 of the
// kernel leaves no worker behind.
type proc struct {
	rank, localRank int
	cmd             *exec.Cmd

	// mu is held while the worker is reaped, so a signal is never sent to
	// a process group id the system may have reused.
	mu     sync.Mutex
	pid    int
	reaped bool
	state  *os.ProcessState
	werr   error

	parentEnds []*os.File // closed when the readers are done (or time out)
	readers    sync.WaitGroup
	done       chan struct{} // closed when reaped and the readers are done
}

// startProc starts cmd and returns once it runs (or failed to start). The
// supervising goroutine — the owner of the process until it is reaped —
// holds its OS thread for the child's lifetime, because Pdeathsig fires
// when the thread that forked the child exits, not the process.
// childEnds are closed in the parent once the child has them.
func startProc(p *proc, childEnds []*os.File) error {
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p.done = make(chan struct{})
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := p.cmd.Start(); err != nil {
			started <- err
			return
		}
		p.mu.Lock()
		p.pid = p.cmd.Process.Pid
		p.mu.Unlock()
		started <- nil
		p.supervise()
	}()
	err := <-started
	for _, f := range childEnds {
		f.Close()
	}
	if err != nil {
		for _, f := range p.parentEnds {
			f.Close()
		}
		return fmt.Errorf("launcher: starting worker for rank %d (%s): %w", p.rank, p.cmd.Path, err)
	}
	return nil
}

// supervise waits for the worker to exit, kills what it left in its
// process group, reaps it and waits for its output to drain.
func (p *proc) supervise() {
	defer close(p.done)
	// Wait without reaping: while the worker is a zombie its pid, and so
	// its process group id, cannot be reused.
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, p.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == nil || !errors.Is(err, unix.EINTR) {
			if err != nil {
				log.WithError(err).Debug("launcher: waitid")
			}
			break
		}
	}
	p.mu.Lock()
	_ = syscall.Kill(-p.pid, syscall.SIGKILL) // descendants left in its group
	p.werr = p.cmd.Wait()
	p.state = p.cmd.ProcessState
	p.reaped = true
	p.mu.Unlock()

	drained := make(chan struct{})
	go func() { p.readers.Wait(); close(drained) }() // ends once the pipes are closed below at the latest
	select {
	case <-drained:
	case <-time.After(readersGrace):
		log.WithField("rank", p.rank).Debug("launcher: worker output still open after exit; closing it")
	}
	for _, f := range p.parentEnds {
		f.Close()
	}
	<-drained
}

// signal sends sig to the worker's process group unless it was reaped.
func (p *proc) signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped || p.pid == 0 {
		return
	}
	if err := syscall.Kill(-p.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		log.WithError(err).WithField("rank", p.rank).Debugf("launcher: sending %s", sig)
	}
}

// exitStatus describes how the reaped worker ended: its exit code (-1 when
// a signal ended it) and the signal's name.
func (p *proc) exitStatus() (code int, sig string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == nil {
		return -1, "unknown exit"
	}
	if ws, ok := p.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, "killed by signal: " + ws.Signal().String()
	}
	return p.state.ExitCode(), ""
}
