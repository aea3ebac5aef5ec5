package fdcapture

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// crashPipeSize is the buffer fd 2's pipe is given. A fatal runtime error
// (a throw: concurrent map writes, a bad pointer found by the garbage
// collector) is printed to fd 2 with the world stopped, so the pump cannot
// read while the runtime writes: beyond the pipe's buffer (64 KiB by
// default, a few hundred goroutines' traceback) the write blocks, and the
// kernel hangs instead of dying, its cell shown busy for good. A megabyte
// holds the traceback of thousands of goroutines.
const crashPipeSize = 1 << 20

// growPipe gives the pipe whose write end is w a buffer of crashPipeSize
// bytes, or as much as the system allows (/proc/sys/fs/pipe-max-size binds
// unprivileged processes); it returns the size it has.
func growPipe(w *os.File) int {
	fd := int(w.Fd())
	if n, err := unix.FcntlInt(uintptr(fd), unix.F_SETPIPE_SZ, crashPipeSize); err == nil {
		return n
	}
	if b, err := os.ReadFile("/proc/sys/fs/pipe-max-size"); err == nil {
		if max, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			if n, err := unix.FcntlInt(uintptr(fd), unix.F_SETPIPE_SZ, max); err == nil {
				return n
			}
		}
	}
	n, _ := unix.FcntlInt(uintptr(fd), unix.F_GETPIPE_SZ, 0)
	return n
}
