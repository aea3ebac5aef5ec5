package pg

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

func TestStoreWrongSecretRejected(t *testing.T) {
	var logs syncBuffer
	l := logrus.New()
	l.SetOutput(&logs)
	st := startStore(t, testSecret, WithStoreLogger(l))

	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	_, err := DialStore(ctx, st.Addr(), "not-the-secret")
	if !errors.Is(err, ErrAuth) {
		t.Fatalf("DialStore with wrong secret: err = %v, want ErrAuth", err)
	}
	for _, want := range []string{"refused this process", "wrong launch secret", st.Addr()} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	deadline := time.Now().Add(patience)
	for !strings.Contains(logs.String(), "refused connection: wrong launch secret") {
		if time.Now().After(deadline) {
			t.Fatalf("store did not log the refusal; log = %q", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}

	// The right secret still works after a refusal.
	c, err := DialStore(ctx, st.Addr(), testSecret)
	if err != nil {
		t.Fatalf("DialStore with the right secret: %v", err)
	}
	c.Close()
}

func TestJoinWrongSecret(t *testing.T) {
	st := startStore(t, testSecret)
	_, err := Join(context.Background(), Config{Rank: 0, WorldSize: 2, StoreAddr: st.Addr(), Secret: "nope", Timeout: patience, Logger: quietLogger()})
	if !errors.Is(err, ErrAuth) {
		t.Fatalf("Join with wrong secret: %v, want ErrAuth", err)
	}
}

// A server that does not know the secret cannot fool the client.
func TestClientRejectsImpostorServer(t *testing.T) {
	srv, cli := net.Pipe()
	defer srv.Close()
	defer cli.Close()
	go func() {
		nonce := make([]byte, nonceLen)
		rand.Read(nonce)
		srv.Write(append([]byte(handshakeMagic), nonce...))
		io.ReadFull(srv, make([]byte, macLen+nonceLen))
		fake := make([]byte, macLen)
		rand.Read(fake)
		srv.Write(append([]byte{statusOK}, fake...))
	}()
	err := clientHandshake(cli, []byte(testSecret), storeLabel, "store x", time.Now().Add(patience))
	if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "does not know the launch secret") {
		t.Fatalf("err = %v, want ErrAuth about the server", err)
	}
}

func TestStoreOperations(t *testing.T) {
	st := startStore(t, testSecret)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	a, err := DialStore(ctx, st.Addr(), testSecret)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := DialStore(ctx, st.Addr(), testSecret)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	// Get blocks until another client sets the key.
	got := make(chan []byte, 1)
	go func() {
		v, err := b.Get(ctx, "k")
		if err != nil {
			t.Error(err)
		}
		got <- v
	}()
	time.Sleep(50 * time.Millisecond) // most likely Get waits in the store by now
	select {
	case v := <-got:
		t.Fatalf("Get returned %q before any Set", v)
	default:
	}
	if err := a.Set(ctx, "k", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	if v := <-got; string(v) != "v1" {
		t.Fatalf("Get = %q, want v1", v)
	}

	for i, want := range []int64{3, 5, 4} {
		n, err := a.Add(ctx, "ctr", []int64{3, 2, -1}[i])
		if err != nil || n != want {
			t.Fatalf("Add #%d = %d, %v; want %d", i, n, err, want)
		}
	}
	if _, err := a.Add(ctx, "k", 1); err == nil || !strings.Contains(err.Error(), "does not hold a counter") {
		t.Fatalf("Add on a non-counter: %v", err)
	}
	present, err := b.Check(ctx, "k", "missing", "ctr")
	if err != nil || !present[0] || present[1] || !present[2] {
		t.Fatalf("Check = %v, %v", present, err)
	}
	if err := a.Delete(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	short, scancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer scancel()
	// ctx would let Get wait patience: the short deadline must end it.
	promptly(t, "Get of a missing key", func() {
		if _, err := b.Get(short, "k"); !errors.Is(err, ErrKeyTimeout) {
			t.Fatalf("Get after Delete: %v, want ErrKeyTimeout", err)
		}
	})
	// The connection is still usable after a server-side timeout.
	if err := b.Set(ctx, "x", nil); err != nil {
		t.Fatal(err)
	}
}

func TestStoreCloseUnblocksServeAndClients(t *testing.T) {
	st, err := NewStore("127.0.0.1:0", testSecret, WithStoreLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- st.Serve(context.Background()) }()
	c, err := DialStore(context.Background(), st.Addr(), testSecret)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	getErr := make(chan error, 1)
	go func() { _, err := c.Get(context.Background(), "never"); getErr <- err }()
	time.Sleep(50 * time.Millisecond)
	st.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve after Close: %v", err)
		}
	case <-time.After(patience):
		t.Fatal("Serve did not return after Close")
	}
	select {
	case err := <-getErr:
		if err == nil {
			t.Fatal("Get on a closed store succeeded")
		}
	case <-time.After(patience):
		t.Fatal("Get did not return after the store closed")
	}
}

func TestPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())

	_, err = NewStore(ln.Addr().String(), testSecret)
	if !errors.Is(err, ErrPortInUse) {
		t.Fatalf("NewStore on a busy port: %v, want ErrPortInUse", err)
	}
	var pe *PortInUseError
	if !errors.As(err, &pe) || pe.Port != port {
		t.Fatalf("error %v does not carry port %s", err, port)
	}
	for _, want := range []string{"port " + port, "already in use", `UsePort "0"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if err := CheckPort("127.0.0.1", port); !errors.Is(err, ErrPortInUse) {
		t.Fatalf("CheckPort on a busy port: %v", err)
	}

	free, err := FreePort("127.0.0.1")
	if err != nil || free <= 0 {
		t.Fatalf("FreePort = %d, %v", free, err)
	}
	if err := CheckPort("127.0.0.1", strconv.Itoa(free)); err != nil {
		t.Fatalf("CheckPort on the free port %d: %v", free, err)
	}
	st, err := NewStore("127.0.0.1:0", testSecret)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.Port() <= 0 || !strings.HasSuffix(st.Addr(), ":"+strconv.Itoa(st.Port())) {
		t.Fatalf("Addr %q / Port %d", st.Addr(), st.Port())
	}
}
