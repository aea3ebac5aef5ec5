package gxrt

import (
	"context"
	"errors"
	"testing"
	"time"
)

func down(n int) int {
	Check()
	return down(n+1) + 1
}

// TestGuardStopsRunawayRecursion: the guard turns what would be a fatal
// stack overflow into a panic the goroutine can recover from.
func TestGuardStopsRunawayRecursion(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go GuardStacks(ctx, 64<<20, time.Millisecond)
	done := make(chan any)
	start := time.Now()
	go func() {
		defer func() { done <- recover() }()
		down(0)
	}()
	v := <-done
	var so StackOverflow
	if err, ok := v.(error); !ok || !errors.As(err, &so) || so.Limit != 64<<20 {
		t.Fatalf("recovered %v, want a StackOverflow", v)
	}
	t.Logf("stopped after %v: %v", time.Since(start), v)
}
