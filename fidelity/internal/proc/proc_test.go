//go:build unix

package proc

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCancelKillsTheGroup starts a shell that leaves a grandchild holding
// its stdout; cancelling must end both, and Wait must not wait for the
// grandchild's pipe.
func TestCancelKillsTheGroup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", "sleep 3600 & echo $!; wait")
	var out bytes.Buffer
	cmd.Stdout = &out
	Isolate(cmd)
	start := time.Now()
	if err := cmd.Run(); err == nil {
		t.Fatal("the shell was not killed")
	}
	if d := time.Since(start); d > 10*time.Minute { // the grandchild sleeps an hour
		t.Fatalf("Run took %v", d)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(out.String()))
	if err != nil {
		t.Fatalf("no grandchild pid in %q", out.String())
	}
	Reap(cmd)
	deadline := time.Now().Add(2 * time.Minute) // a hang guard; the kill is immediate
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d survived", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether pid runs: it exists and, where /proc tells, is not
// a zombie waiting for a parent to reap it.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z")
}
