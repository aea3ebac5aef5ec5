//go:build linux

package fdcapture

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

const crashHelperEnv = "GOACCEL_FDCAPTURE_CRASH_HELPER"

// A fatal runtime error in a process whose fd 2 is captured ends the
// process, with its traceback on the original stderr, even when the
// traceback is far larger than a pipe's default buffer: the runtime writes
// it with the world stopped, so nothing reads the pipe meanwhile.
func TestFatalErrorWithManyGoroutinesEndsTheProcess(t *testing.T) {
	if os.Getenv(crashHelperEnv) == "1" {
		crashWithManyGoroutines()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFatalErrorWithManyGoroutinesEndsTheProcess$")
	// GOTRACEBACK=all: every goroutine in the traceback, as a throw of the
	// runtime (a bad pointer found by the garbage collector) prints them.
	cmd.Env = append(os.Environ(), crashHelperEnv+"=1", "GOTRACEBACK=all")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// Before the fix this wait never returned (the test's own timeout is
	// the bound): the process hung in write(2).
	err := cmd.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 2 {
		t.Fatalf("the crashing process ended with %v, want exit status 2\n%s", err, tail(stderr.String()))
	}
	out := stderr.String()
	// The headline ("fatal error: ...") is printed before the runtime
	// knows it is dying, so only to fd 2 (the pump hands it on); the
	// tracebacks go to the original stderr as well (SetCrashOutput).
	if strings.Count(out, "goroutine ") < 500 {
		t.Errorf("the original stderr does not hold the whole crash (%d bytes, %d goroutines):\n%s",
			len(out), strings.Count(out, "goroutine "), tail(out))
	}
}

func tail(s string) string {
	if len(s) > 2000 {
		return "…" + s[len(s)-2000:]
	}
	return s
}

// crashWithManyGoroutines captures fds 1 and 2, starts 600 goroutines that
// block (their stacks make a traceback of a few hundred KiB) and throws.
func crashWithManyGoroutines() {
	if _, err := Redirect(); err != nil {
		panic(err)
	}
	var block sync.WaitGroup
	block.Add(1)
	var started sync.WaitGroup
	for i := 0; i < 600; i++ {
		started.Add(1)
		go func() {
			started.Done()
			block.Wait()
		}()
	}
	started.Wait()
	m := map[int]int{}
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; ; j++ {
				m[j%64] = j // fatal error: concurrent map writes
			}
		}()
	}
	wg.Wait()
}
