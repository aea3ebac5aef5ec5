package cli

import (
	"context"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
)

// parentPollInterval is how often the kernel looks for its parent.
const parentPollInterval = time.Second

// watchParent calls stop when the process that started the kernel is gone,
// as ipykernel's parent poller does: its parent process changed (it died
// and the kernel was handed to another), or the process JPY_PARENT_PID
// names (Jupyter's server, which jupyter_client records) no longer exists.
// A kernel whose client was killed would otherwise hold its ports, its
// compiled cells and its launched workers forever. It returns when ctx ends
// or after calling stop.
func watchParent(ctx context.Context, stop func(), log logrus.FieldLogger, interval time.Duration) {
	ppid := os.Getppid()
	jpy, _ := strconv.Atoi(os.Getenv("JPY_PARENT_PID"))
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		switch {
		case os.Getppid() != ppid:
			log.WithField("parent", ppid).Warn("the kernel's parent process is gone; shutting down")
		case jpy > 0 && !processExists(jpy):
			log.WithField("JPY_PARENT_PID", jpy).Warn("the Jupyter server that started the kernel is gone; shutting down")
		default:
			continue
		}
		stop()
		return
	}
}

// processExists reports whether pid names a process (signal 0 checks
// without sending; a process of another user answers EPERM).
func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
