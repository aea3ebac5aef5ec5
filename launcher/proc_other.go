//go:build !linux

package launcher

import (
	"errors"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// proc is a worker process; multi-process launches need Linux (process
// groups, Pdeathsig and waitid are what guarantee that no worker outlives
// the kernel).
type proc struct {
	rank, localRank int
	cmd             *exec.Cmd
	parentEnds      []*os.File
	readers         sync.WaitGroup
	done            chan struct{}
}

var errUnsupported = errors.New("launcher: worker processes are supported on Linux only; use NumProcesses 1")

func startProc(p *proc, childEnds []*os.File) error {
	for _, f := range append(childEnds, p.parentEnds...) {
		f.Close()
	}
	return errUnsupported
}

func (p *proc) signal(syscall.Signal) {}

func (p *proc) exitStatus() (int, string) { return -1, "unsupported" }
