package pg

import (
	"bytes"
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

const testSecret = "test-secret-0123456789"

// patience bounds what must not time out in these tests (a join, a
// collective, a store reply, a worker process): a hang guard far above what
// a cold, busy machine needs, never a budget.
const patience = 10 * time.Minute

// prompt is what "ended promptly" means for a wait that a short timeout or a
// cancellation must end: the alternative (patience, DefaultTimeout, no end)
// is at least five times longer, so the bound proves the point however busy
// the machine.
const prompt = 2 * time.Minute

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func quietLogger() *logrus.Logger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// startStore runs a store on a free loopback port for the test's lifetime.
func startStore(t testing.TB, secret string, opts ...StoreOption) *Store {
	t.Helper()
	if len(opts) == 0 {
		opts = []StoreOption{WithStoreLogger(quietLogger())}
	}
	st, err := NewStore("127.0.0.1:0", secret, opts...)
	if err != nil {
		t.Fatalf("NewStore: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- st.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return st
}

// joinAll joins n ranks (goroutines, real TCP on 127.0.0.1) and closes them
// at the end of the test. Their Timeout (join and every collective) is
// patience.
func joinAll(t testing.TB, n int) []*Group {
	t.Helper()
	st := startStore(t, testSecret)
	groups := make([]*Group, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := 0; r < n; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			groups[r], errs[r] = Join(context.Background(), Config{
				Rank: r, WorldSize: n, StoreAddr: st.Addr(), Secret: testSecret,
				Timeout: patience, Logger: quietLogger(),
			})
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: Join: %v", r, err)
		}
	}
	t.Cleanup(func() {
		for _, g := range groups {
			g.Close()
		}
	})
	return groups
}

// onAll runs f for every rank concurrently and returns the per-rank errors.
func onAll(groups []*Group, f func(r int, g *Group) error) []error {
	errs := make([]error, len(groups))
	var wg sync.WaitGroup
	for r, g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = f(r, g)
		}()
	}
	wg.Wait()
	return errs
}

func mustAll(t testing.TB, errs []error) {
	t.Helper()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
}

// promptly runs f and fails the test when it took longer than prompt: f's
// wait was not ended by what should have ended it.
func promptly(t testing.TB, what string, f func()) {
	t.Helper()
	start := time.Now()
	f()
	if el := time.Since(start); el > prompt {
		t.Fatalf("%s took %v, want < %v", what, el, prompt)
	}
}
