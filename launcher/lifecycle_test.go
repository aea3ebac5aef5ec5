//go:build linux

package launcher_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goaccel/goaccel/launcher"
	"github.com/goaccel/goaccel/launcher/launchertest"
)

var pidRE = regexp.MustCompile(`pid=(\d+)`)

// pids returns the worker pids printed as "pid=N".
func pids(out string) []int {
	var ps []int
	for _, m := range pidRE.FindAllStringSubmatch(out, -1) {
		p, _ := strconv.Atoi(m[1])
		ps = append(ps, p)
	}
	return ps
}

// assertGone checks that pid is neither running nor a zombie.
func assertGone(t *testing.T, pid int) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err == nil {
		t.Errorf("worker %d still exists: %s", pid, b)
	} else if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("reading /proc/%d: %v", pid, err)
	}
}

// waitPIDs polls pub until n "pid=" lines arrived.
func waitPIDs(t *testing.T, pub *launchertest.Publisher, n int) []int {
	t.Helper()
	deadline := time.Now().Add(patience)
	for time.Now().Before(deadline) {
		if ps := pids(pub.Text("stdout")); len(ps) >= n {
			return ps
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("workers did not report their pids: %q", pub.Text("stdout"))
	return nil
}

func TestInterruptStopsEveryWorker(t *testing.T) {
	defer launcher.FakeGPUs()()
	for _, honor := range []bool{true, false} {
		t.Run("honorsInterrupt="+strconv.FormatBool(honor), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			pub := &launchertest.Publisher{}
			restore := launcher.SetCell(ctx, pub)
			defer restore()
			type ret struct {
				err error
				at  time.Time
			}
			done := make(chan ret, 1)
			go func() {
				_, err := launcher.NotebookLauncher(sleeper, []any{honor}, launcher.Options{NumProcesses: 3, UsePort: "0"})
				done <- ret{err, time.Now()}
			}()
			ps := waitPIDs(t, pub, 3)
			start := time.Now()
			cancel()
			var r ret
			select {
			case r = <-done:
			case <-time.After(patience):
				t.Fatalf("the launcher did not return within %s of the interrupt", patience)
			}
			took := r.at.Sub(start)
			t.Logf("interrupt to return: %s", took)
			if !errors.Is(r.err, context.Canceled) || !strings.Contains(r.err.Error(), "interrupted; all 3 workers stopped") {
				t.Errorf("error %v", errText(r.err))
			}
			if honor {
				// SIGINT comes first, and it suffices: every worker saw it
				// and returned on its own.
				for _, p := range ps {
					if !strings.Contains(pub.Text("stdout"), fmt.Sprintf("interrupted=%d\n", p)) {
						t.Errorf("worker %d did not report the SIGINT: %q", p, pub.Text("stdout"))
					}
				}
			} else if took < launcher.InterruptTerm {
				// A worker that ignores SIGINT needs the SIGTERM, which
				// comes InterruptTerm after it.
				t.Errorf("stopping took %s, less than the %s before SIGTERM", took, launcher.InterruptTerm)
			}
			// The workers that ignore SIGINT sleep forever: gone, they
			// were stopped.
			if took > prompt {
				t.Errorf("stopping took %s, want at most %s", took, prompt)
			}
			for _, p := range ps {
				assertGone(t, p)
			}
		})
	}
}

// TestKill9OfKernelLeavesNoWorker kills -9 a process playing the kernel
// (this test binary re-executed) while its workers run: Pdeathsig must kill
// them. This process becomes a child subreaper so the orphaned workers are
// reparented to it and it can check how they died and reap them.
func TestKill9OfKernelLeavesNoWorker(t *testing.T) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatalf("PR_SET_CHILD_SUBREAPER: %v", err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	kernel := exec.Command(exe)
	kernel.Env = append(os.Environ(), roleEnv+"=kernel")
	kernel.Stderr = os.Stderr
	out, err := kernel.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := kernel.Start(); err != nil {
		t.Fatal(err)
	}
	found := make(chan []int, 1)
	go func() {
		var ps []int
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			ps = append(ps, pids(sc.Text())...)
			if len(ps) == 2 {
				found <- ps
			}
		}
	}()
	var ps []int
	select {
	case ps = <-found:
	case <-time.After(patience):
		kernel.Process.Kill()
		kernel.Wait()
		t.Fatal("the fake kernel's workers did not start")
	}
	t.Cleanup(func() { // a failing test must not leave workers behind
		for _, pid := range ps {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				var ws syscall.WaitStatus
				syscall.Wait4(pid, &ws, 0, nil)
			}
		}
	})
	if err := kernel.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	kernel.Wait()
	killedAt := time.Now()
	for _, pid := range ps {
		var ws syscall.WaitStatus
		for {
			got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
			if err != nil {
				t.Fatalf("worker %d was not reparented to the test (wait4: %v)", pid, err)
			}
			if got == pid {
				break
			}
			if time.Since(killedAt) > prompt { // it would sleep forever
				t.Fatalf("worker %d still alive %s after kill -9 of its kernel", pid, prompt)
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Logf("worker %d ended %s after its kernel: %v", pid, time.Since(killedAt), ws)
		if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Errorf("worker %d ended with %v, want killed by SIGKILL (Pdeathsig)", pid, ws)
		}
		assertGone(t, pid)
	}
}
