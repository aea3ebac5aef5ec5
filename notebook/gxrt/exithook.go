package gxrt

import (
	"errors"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"sync"
	_ "unsafe" // go:linkname
)

// os.Exit called by compiled packages. Cell code's own os.Exit, log.Fatal
// and flag.Parse are rewritten to Exit and friends, but a package a cell
// calls (testing.Main, a library's log.Fatal, a CLI framework) calls the real
// os.Exit, which would end the kernel. os.Exit runs the runtime's exit hooks
// first, in the goroutine that called it; goaccel's hook ends that goroutine
// instead when it belongs to a cell, and reports the exit to the engine.
//
// Reaching the hooks needs a linkname into the runtime's internal package,
// so binaries that contain this package are linked with -checklinkname=0
// (the Makefile, the plugin builder and the fidelity harness do).

// exitHook is internal/runtime/exithook.Hook.
type exitHook struct {
	F            func()
	RunOnFailure bool
}

//go:linkname addExitHook internal/runtime/exithook.Add
func addExitHook(h exitHook)

var exitHookOnce sync.Once

// CatchExits installs the exit hook (once per process).
func CatchExits() {
	exitHookOnce.Do(func() { addExitHook(exitHook{F: onExit, RunOnFailure: true}) })
}

// exitArg finds os.Exit's argument in a goroutine's stack trace.
var exitArg = regexp.MustCompile(`\nos\.Exit\((0x[0-9a-f]+)`)

// onExit runs in the goroutine calling os.Exit, before the process exits.
func onExit() {
	cell := CurrentCell()
	h := current()
	if cell == 0 || h.Exit == nil {
		return // the kernel's own exit
	}
	code := 1
	buf := make([]byte, 8<<10)
	if m := exitArg.FindSubmatch(buf[:runtime.Stack(buf, false)]); m != nil {
		if c, err := strconv.ParseInt(string(m[1]), 0, 64); err == nil {
			code = int(int32(c))
		}
	}
	h.Exit(cell, code)
	// The runtime pops a hook before running it, and adds wait until the
	// hooks have run: put this one back once this goroutine is gone.
	go addExitHook(exitHook{F: onExit, RunOnFailure: true})
	// Unlike os.Exit, Goexit runs the goroutine's deferred calls; parking
	// the goroutine instead would leave the runtime's exit lock held, and the
	// kernel could never exit.
	runtime.Goexit()
}

// Exec is syscall.Exec for cells: replacing the kernel's process would end
// the session, so the program runs as a child with the cell's stdin, stdout
// and stderr, and its exit ends the cell as the replaced process's exit
// would end a program (status 0: no error). Like syscall.Exec, it returns
// only when the program cannot be started.
func Exec(argv0 string, argv []string, envv []string) error {
	cmd := &exec.Cmd{Path: argv0, Args: argv, Env: envv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	if err := cmd.Start(); err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return pe.Err // syscall.Exec returns the errno itself
		}
		return err
	}
	err := cmd.Wait()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		code = 1
	}
	Exit(code)
	return nil
}
