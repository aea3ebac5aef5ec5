package pg

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

// scriptedStore is a store whose answers the test times: it authenticates
// one client, hands each request to the test on reqs and writes back what
// the test sends on replies. It lets the tests order the client's deadline
// and the store's answer instead of racing two clocks.
type scriptedStore struct {
	addr    string
	reqs    chan scriptedRequest
	replies chan scriptedReply
}

type scriptedRequest struct {
	op      byte
	timeout time.Duration
	args    [][]byte
}

type scriptedReply struct {
	status byte
	out    [][]byte
}

func startScriptedStore(t *testing.T) *scriptedStore {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &scriptedStore{addr: ln.Addr().String(), reqs: make(chan scriptedRequest), replies: make(chan scriptedReply)}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); close(done) })
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		if err := serverHandshake(conn, []byte(testSecret), storeLabel); err != nil {
			return
		}
		r := bufio.NewReader(conn)
		for {
			op, timeout, args, err := readRequest(r)
			if err != nil {
				return
			}
			select {
			case s.reqs <- scriptedRequest{op, timeout, args}:
			case <-done:
				return
			}
			var rep scriptedReply
			select {
			case rep = <-s.replies:
			case <-done:
				return
			}
			if err := writeFrame(conn, rep.status, 0, rep.out); err != nil {
				return
			}
		}
	}()
	return s
}

// request waits for the client's next request; the limit only turns a
// broken client into a failure instead of a hung test.
func (s *scriptedStore) request(t *testing.T) scriptedRequest {
	t.Helper()
	select {
	case r := <-s.reqs:
		return r
	case <-time.After(time.Minute):
		t.Fatal("the client sent no request")
		return scriptedRequest{}
	}
}

func dialScripted(t *testing.T, s *scriptedStore) *StoreClient {
	t.Helper()
	c, err := DialStore(context.Background(), s.addr, testSecret)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// The store answers "timeout" only after the caller's deadline has passed
// (the order a busy machine produces half the time): Get reports
// ErrKeyTimeout and the client stays usable.
func TestStoreDeadlineAnsweredLateKeepsClient(t *testing.T) {
	s := startScriptedStore(t)
	c := dialScripted(t, s)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	got := make(chan error, 1)
	go func() { _, err := c.Get(ctx, "missing"); got <- err }()
	req := s.request(t)
	if req.op != storeGet || req.timeout <= 0 || req.timeout > 50*time.Millisecond {
		t.Fatalf("request op %d timeout %v; want a get asking the store to wait at most 50ms", req.op, req.timeout)
	}
	<-ctx.Done() // the client's deadline has passed before the store answers
	s.replies <- scriptedReply{status: respTimeout}
	if err := <-got; !errors.Is(err, ErrKeyTimeout) || !strings.Contains(err.Error(), `"missing"`) {
		t.Fatalf("Get = %v, want ErrKeyTimeout naming the key", err)
	}

	// Same for GetWait, whose wait is shorter than ctx's deadline.
	go func() { _, err := c.GetWait(context.Background(), "missing", 20*time.Millisecond); got <- err }()
	if req := s.request(t); req.timeout != 20*time.Millisecond {
		t.Fatalf("GetWait asked the store to wait %v, want 20ms", req.timeout)
	}
	time.Sleep(40 * time.Millisecond) // past the wait: the answer comes late
	s.replies <- scriptedReply{status: respTimeout}
	if err := <-got; !errors.Is(err, ErrKeyTimeout) {
		t.Fatalf("GetWait = %v, want ErrKeyTimeout", err)
	}

	// The connection still works.
	go func() { got <- c.Set(context.Background(), "k", []byte("v")) }()
	if req := s.request(t); req.op != storeSet {
		t.Fatalf("op %d, want set", req.op)
	}
	s.replies <- scriptedReply{status: respOK}
	if err := <-got; err != nil {
		t.Fatalf("Set after a timed-out Get: %v", err)
	}
}

// A deadline already past sends nothing and breaks nothing.
func TestStoreExpiredDeadline(t *testing.T) {
	s := startScriptedStore(t)
	c := dialScripted(t, s)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if _, err := c.Get(ctx, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get with an expired deadline = %v, want context.DeadlineExceeded", err)
	}
	got := make(chan error, 1)
	go func() { got <- c.Delete(context.Background(), "k") }()
	if req := s.request(t); req.op != storeDelete {
		t.Fatalf("op %d, want delete", req.op)
	}
	s.replies <- scriptedReply{status: respOK}
	if err := <-got; err != nil {
		t.Fatalf("Delete after an expired Get: %v", err)
	}
}

// Cancelling interrupts a call the store has not answered; the connection
// may still carry that answer, so the client is closed for good.
func TestStoreCancelBreaksClient(t *testing.T) {
	s := startScriptedStore(t)
	c := dialScripted(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() { _, err := c.Get(ctx, "k"); got <- err }()
	s.request(t)
	cancel()
	err := <-got
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Get = %v, want context.Canceled", err)
	}
	if err2 := c.Set(context.Background(), "x", nil); err2 == nil || err2.Error() != err.Error() {
		t.Fatalf("Set after a cancelled Get = %v, want the same error %q", err2, err)
	}

	// A context cancelled before the call returns at once and breaks nothing.
	s2 := startScriptedStore(t)
	c2 := dialScripted(t, s2)
	if err := c2.Set(ctx, "x", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Set with a cancelled context = %v", err)
	}
	go func() { got <- c2.Set(context.Background(), "x", nil) }()
	s2.request(t)
	s2.replies <- scriptedReply{status: respOK}
	if err := <-got; err != nil {
		t.Fatalf("Set after a refused call: %v", err)
	}
}

// A store that stays silent past the grace period breaks the client with
// an error that says so.
func TestStoreSilentPastGrace(t *testing.T) {
	s := startScriptedStore(t)
	c := dialScripted(t, s)
	c.grace = 10 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	got := make(chan error, 1)
	go func() { _, err := c.Get(ctx, "k"); got <- err }()
	s.request(t) // and never answer
	err := <-got
	if err == nil || !strings.Contains(err.Error(), "connection lost: no answer") || !strings.Contains(err.Error(), s.addr) {
		t.Fatalf("Get from a silent store = %v, want connection lost naming the store", err)
	}
	if err2 := c.Set(context.Background(), "x", nil); err2 == nil || err2.Error() != err.Error() {
		t.Fatalf("Set after the store went silent = %v, want %q", err2, err)
	}
}
