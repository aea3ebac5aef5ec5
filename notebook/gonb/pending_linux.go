package gonb

import (
	"os"

	"golang.org/x/sys/unix"
)

// pending is how many bytes wait unread in the pipe f (FIONREAD). It
// reaches the descriptor through SyscallConn: f.Fd would make it blocking.
func pending(f *os.File) int {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	_ = rc.Control(func(fd uintptr) {
		n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ)
	})
	return n
}
