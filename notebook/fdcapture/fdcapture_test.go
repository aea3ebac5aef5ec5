//go:build unix

package fdcapture

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRedirect(t *testing.T) {
	c, err := Redirect()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	got := map[string]string{}
	c.SetOutput(func(stream string, p []byte) {
		mu.Lock()
		got[stream] += string(p)
		mu.Unlock()
	})
	fmt.Fprintln(os.Stdout, "to fd 1")
	os.Stderr.WriteString("to fd 2\n")
	fmt.Fprintln(c.OriginalStderr(), "kernel log line (goes to the real stderr)")
	deadline := time.Now().Add(5 * time.Minute) // a hang guard: the output comes
	for time.Now().Before(deadline) {
		mu.Lock()
		ok := strings.Contains(got["stdout"], "to fd 1") && strings.Contains(got["stderr"], "to fd 2")
		mu.Unlock()
		if ok {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := c.Restore(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got["stdout"] != "to fd 1\n" || got["stderr"] != "to fd 2\n" {
		t.Errorf("captured %q", got)
	}
	if err := c.Restore(); err != nil {
		t.Errorf("second Restore: %v", err)
	}
}

// TestDrainWaitsForASlowOutput: Drain returns only once what was written
// before it has been handed on, however long the Output takes.
func TestDrainWaitsForASlowOutput(t *testing.T) {
	c, err := Redirect()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Restore()
	var mu sync.Mutex
	var got strings.Builder
	c.SetOutput(func(stream string, p []byte) {
		time.Sleep(100 * time.Millisecond) // a busy machine, a slow front end
		mu.Lock()
		got.Write(p)
		mu.Unlock()
	})
	for i := 0; i < 3; i++ {
		fmt.Fprintf(os.Stderr, "line %d\n", i)
		time.Sleep(time.Millisecond) // separate writes, read separately
	}
	c.Drain(time.Minute) // a hang guard
	mu.Lock()
	defer mu.Unlock()
	if got.String() != "line 0\nline 1\nline 2\n" {
		t.Fatalf("after Drain: %q", got.String())
	}
}
