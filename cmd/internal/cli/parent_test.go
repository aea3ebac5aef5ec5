package cli

import (
	"context"
	"io"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

// The kernel stops when the process JPY_PARENT_PID names is gone, and not
// while it lives.
func TestWatchParentStopsWhenJupyterIsGone(t *testing.T) {
	server := exec.Command("sleep", "3600")
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Setenv("JPY_PARENT_PID", strconv.Itoa(server.Process.Pid))
	log := logrus.New()
	log.SetOutput(io.Discard)
	stopped := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go watchParent(ctx, func() { close(stopped) }, log, 10*time.Millisecond)

	time.Sleep(100 * time.Millisecond) // ten polls with the server alive
	select {
	case <-stopped:
		t.Fatal("stopped while the server was alive")
	default:
	}
	server.Process.Kill()
	server.Wait()
	select {
	case <-stopped:
	case <-time.After(2 * time.Minute): // a hang guard: the poll is every 10 ms
		t.Fatal("the kernel did not stop after its server died")
	}
}
