package pg

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// Store request opcodes.
const (
	storeSet    = 1
	storeGet    = 2 // blocks until the key exists or the request's timeout passes
	storeAdd    = 3
	storeCheck  = 4
	storeDelete = 5
)

// Store response statuses.
const (
	respOK      = 0
	respTimeout = 1
	respError   = 2
)

const (
	storeLabel  = "store"
	maxStoreArg = 64 << 20
)

// ErrKeyTimeout is wrapped by StoreClient.Get when the key did not appear in
// time.
var ErrKeyTimeout = errors.New("pg: store key did not appear in time")

// Store is the rendezvous key-value server. Create it with NewStore, run it
// with Serve, stop it with Close (or by cancelling Serve's context).
type Store struct {
	ln     net.Listener
	secret []byte
	log    logrus.FieldLogger

	mu      sync.Mutex
	data    map[string][]byte
	changed chan struct{} // closed and replaced on every mutation
	conns   map[net.Conn]struct{}

	closeOnce sync.Once
	done      chan struct{}
	wg        sync.WaitGroup // connection handlers
}

// StoreOption configures a Store.
type StoreOption func(*Store)

// WithStoreLogger sets where the store logs rejected connections and errors
// (default: logrus.StandardLogger()).
func WithStoreLogger(l logrus.FieldLogger) StoreOption {
	return func(s *Store) {
		if l != nil {
			s.log = l
		}
	}
}

// NewStore listens on addr ("host:port"; port "0" picks a free port, see Addr)
// and returns a store that admits only clients presenting secret. A taken
// port yields a *PortInUseError. The store serves nothing until Serve runs.
func NewStore(addr, secret string, opts ...StoreOption) (*Store, error) {
	if secret == "" {
		return nil, errors.New("pg: NewStore: empty launch secret")
	}
	ln, err := Listen(addr)
	if err != nil {
		return nil, err
	}
	s := &Store{
		ln:      ln,
		secret:  []byte(secret),
		log:     logrus.StandardLogger(),
		data:    make(map[string][]byte),
		changed: make(chan struct{}),
		conns:   make(map[net.Conn]struct{}),
		done:    make(chan struct{}),
	}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// Addr returns the address the store listens on, with the real port when
// "0" was requested.
func (s *Store) Addr() string { return s.ln.Addr().String() }

// Port returns the port the store listens on.
func (s *Store) Port() int {
	_, p, _ := net.SplitHostPort(s.Addr())
	n, _ := strconv.Atoi(p)
	return n
}

// Serve accepts and serves clients until ctx is cancelled or Close is
// called; it then closes every client connection, waits for their handlers
// and returns nil. Any other accept failure is returned.
func (s *Store) Serve(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { _ = s.Close() })
	defer stop()
	defer s.wg.Wait()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			select {
			case <-s.done:
				return nil
			default:
			}
			_ = s.Close()
			return fmt.Errorf("pg: store accept: %w", err)
		}
		s.mu.Lock()
		select {
		case <-s.done:
			s.mu.Unlock()
			conn.Close()
			return nil
		default:
		}
		s.conns[conn] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.handle(conn)
	}
}

// Close stops the store: the listener and every client connection are
// closed. It is safe to call more than once and concurrently with Serve.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.mu.Lock()
		close(s.done)
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		err = s.ln.Close()
	})
	return err
}

func (s *Store) handle(conn net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, conn)
		s.mu.Unlock()
		conn.Close()
	}()
	remote := conn.RemoteAddr().String()
	if err := serverHandshake(conn, s.secret, storeLabel); err != nil {
		var rej *rejectError
		if errors.As(err, &rej) {
			s.log.WithField("remote", remote).Warnf("pg store: refused connection: %s", rej.reason)
		} else {
			s.log.WithField("remote", remote).Debugf("pg store: handshake failed: %v", err)
		}
		return
	}
	r := bufio.NewReader(conn)
	for {
		op, timeout, args, err := readRequest(r)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.log.WithField("remote", remote).Debugf("pg store: %v", err)
			}
			return
		}
		status, out := s.apply(op, timeout, args)
		if err := writeFrame(conn, status, 0, out); err != nil {
			return
		}
	}
}

func (s *Store) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Store) apply(op byte, timeout time.Duration, args [][]byte) (byte, [][]byte) {
	bad := func(msg string) (byte, [][]byte) { return respError, [][]byte{[]byte(msg)} }
	switch op {
	case storeSet:
		if len(args) != 2 {
			return bad("set: want key and value")
		}
		s.mu.Lock()
		s.data[string(args[0])] = args[1]
		s.notifyLocked()
		s.mu.Unlock()
		return respOK, nil
	case storeAdd:
		if len(args) != 2 || len(args[1]) != 8 {
			return bad("add: want key and int64 delta")
		}
		delta := int64(binary.LittleEndian.Uint64(args[1]))
		s.mu.Lock()
		var cur int64
		if v, ok := s.data[string(args[0])]; ok {
			if len(v) != 8 {
				s.mu.Unlock()
				return bad("add: key " + strconv.Quote(string(args[0])) + " does not hold a counter")
			}
			cur = int64(binary.LittleEndian.Uint64(v))
		}
		cur += delta
		v := binary.LittleEndian.AppendUint64(nil, uint64(cur))
		s.data[string(args[0])] = v
		s.notifyLocked()
		s.mu.Unlock()
		return respOK, [][]byte{v}
	case storeCheck:
		out := make([]byte, len(args))
		s.mu.Lock()
		for i, k := range args {
			if _, ok := s.data[string(k)]; ok {
				out[i] = 1
			}
		}
		s.mu.Unlock()
		return respOK, [][]byte{out}
	case storeDelete:
		if len(args) != 1 {
			return bad("delete: want key")
		}
		s.mu.Lock()
		delete(s.data, string(args[0]))
		s.notifyLocked()
		s.mu.Unlock()
		return respOK, nil
	case storeGet:
		if len(args) != 1 {
			return bad("get: want key")
		}
		var timer <-chan time.Time
		if timeout > 0 {
			t := time.NewTimer(timeout)
			defer t.Stop()
			timer = t.C
		}
		for {
			s.mu.Lock()
			v, ok := s.data[string(args[0])]
			ch := s.changed
			s.mu.Unlock()
			if ok {
				return respOK, [][]byte{v}
			}
			select {
			case <-ch:
			case <-timer:
				return respTimeout, nil
			case <-s.done:
				return bad("store closed")
			}
		}
	default:
		return bad("unknown op " + strconv.Itoa(int(op)))
	}
}

// Frames (requests and responses): op/status u8, timeout-ms u64, nargs u16,
// then per argument a u32 length and its bytes.
func writeFrame(w io.Writer, op byte, timeout time.Duration, args [][]byte) error {
	n := 1 + 8 + 2
	for _, a := range args {
		n += 4 + len(a)
	}
	b := make([]byte, 0, n)
	b = append(b, op)
	b = binary.LittleEndian.AppendUint64(b, uint64(timeout/time.Millisecond))
	b = binary.LittleEndian.AppendUint16(b, uint16(len(args)))
	for _, a := range args {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(a)))
		b = append(b, a...)
	}
	_, err := w.Write(b)
	return err
}

func readRequest(r io.Reader) (byte, time.Duration, [][]byte, error) {
	var h [11]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, 0, nil, err
	}
	timeout := time.Duration(binary.LittleEndian.Uint64(h[1:9])) * time.Millisecond
	nargs := int(binary.LittleEndian.Uint16(h[9:11]))
	args := make([][]byte, nargs)
	for i := range args {
		var l [4]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return 0, 0, nil, err
		}
		n := binary.LittleEndian.Uint32(l[:])
		if n > maxStoreArg {
			return 0, 0, nil, fmt.Errorf("store frame argument of %d bytes exceeds the %d limit", n, maxStoreArg)
		}
		args[i] = make([]byte, n)
		if _, err := io.ReadFull(r, args[i]); err != nil {
			return 0, 0, nil, err
		}
	}
	return h[0], timeout, args, nil
}

// StoreClient is an authenticated connection to a Store. Its methods are
// safe for concurrent use (requests are serialized).
type StoreClient struct {
	addr string
	conn net.Conn
	r    *bufio.Reader

	mu     sync.Mutex
	broken error

	grace time.Duration // storeGrace when zero; tests shorten it
}

// DialStore connects to the store at addr and authenticates with secret.
// While the store is not up yet (connection refused) it retries until ctx is
// done; an authentication failure (wrapping ErrAuth) is returned at once.
func DialStore(ctx context.Context, addr, secret string) (*StoreClient, error) {
	if secret == "" {
		return nil, errors.New("pg: DialStore: empty launch secret")
	}
	what := "store " + addr
	backoff := 20 * time.Millisecond
	var lastErr error
	for {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			dl, _ := ctx.Deadline()
			if err := clientHandshake(conn, []byte(secret), storeLabel, what, dl); err != nil {
				conn.Close()
				return nil, err
			}
			return &StoreClient{addr: addr, conn: conn, r: bufio.NewReader(conn)}, nil
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("pg: could not reach the rendezvous store at %s (%v): %w", addr, lastErr, ctx.Err())
		case <-time.After(backoff):
		}
		if backoff < 500*time.Millisecond {
			backoff *= 2
		}
	}
}

// LocalAddr is the local end of the connection to the store (the address
// other hosts can reach this one on, when the store is remote).
func (c *StoreClient) LocalAddr() net.Addr { return c.conn.LocalAddr() }

// Close closes the connection.
func (c *StoreClient) Close() error { return c.conn.Close() }

func (c *StoreClient) do(ctx context.Context, op byte, args ...[]byte) (byte, [][]byte, error) {
	return c.doWait(ctx, 0, op, args...)
}

// storeGrace is how long past the time a store was asked to answer by the
// client waits for the answer before it takes the store for silent. The store
// answers a get that timed out by itself, at that same instant; the grace
// covers the trip back on a busy machine, not a second chance for the key.
const storeGrace = 10 * time.Second

// doWait is do with the server-side wait of a get set to wait (when
// positive) instead of ctx's deadline.
//
// The error contract (for Get, GetWait and every other call):
//   - ctx's deadline passing is not a failure of the connection: the store
//     was told how long to wait and answers by itself (a get then wraps
//     ErrKeyTimeout), so the client waits for that answer and stays usable.
//     A deadline that has already passed when the call starts returns an
//     error wrapping context.DeadlineExceeded without a request.
//   - ctx being cancelled interrupts the request at once: the error wraps
//     context.Canceled (or ctx's cause) and, since an answer may still be
//     on its way, the connection can no longer be trusted and is closed.
//   - A store silent for grace past the time it was asked to answer, or a
//     connection that fails, breaks the client too: that call and every
//     later one return an error naming the store ("connection lost").
func (c *StoreClient) doWait(ctx context.Context, wait time.Duration, op byte, args ...[]byte) (byte, [][]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken != nil {
		return 0, nil, c.broken
	}
	if err := context.Cause(ctx); err != nil && ctx.Err() == context.Canceled {
		return 0, nil, fmt.Errorf("pg: store %s: %w", c.addr, err)
	}
	grace := c.grace
	if grace == 0 {
		grace = storeGrace
	}
	var timeout time.Duration
	if dl, ok := ctx.Deadline(); wait > 0 && (!ok || time.Until(dl) > wait) {
		timeout = wait
		_ = c.conn.SetDeadline(time.Now().Add(wait + grace))
	} else if ok {
		timeout = time.Until(dl)
		if timeout <= 0 {
			return 0, nil, fmt.Errorf("pg: store %s: %w", c.addr, context.DeadlineExceeded)
		}
		if timeout < time.Millisecond {
			timeout = time.Millisecond
		}
		_ = c.conn.SetDeadline(time.Now().Add(timeout + grace))
	} else {
		_ = c.conn.SetDeadline(time.Time{})
	}
	// Only a cancellation interrupts the exchange; a deadline is answered
	// by the store (see above).
	stop := context.AfterFunc(ctx, func() {
		if ctx.Err() == context.Canceled {
			_ = c.conn.SetDeadline(time.Unix(1, 0))
		}
	})
	defer stop()
	fail := func(err error) (byte, [][]byte, error) {
		if ctx.Err() == context.Canceled {
			err = fmt.Errorf("pg: store %s: %w", c.addr, context.Cause(ctx))
		} else if errors.Is(err, os.ErrDeadlineExceeded) {
			err = fmt.Errorf("pg: store %s: connection lost: no answer %v after the store was due to answer", c.addr, grace)
		} else {
			err = fmt.Errorf("pg: store %s: connection lost: %w", c.addr, err)
		}
		c.broken = err
		c.conn.Close()
		return 0, nil, err
	}
	if err := writeFrame(c.conn, op, timeout, args); err != nil {
		return fail(err)
	}
	status, _, out, err := readRequest(c.r)
	if err != nil {
		return fail(err)
	}
	if status == respError {
		msg := "error"
		if len(out) > 0 {
			msg = string(out[0])
		}
		return status, nil, fmt.Errorf("pg: store %s: %s", c.addr, msg)
	}
	return status, out, nil
}

// Set stores value under key, waking any Get waiting for it.
func (c *StoreClient) Set(ctx context.Context, key string, value []byte) error {
	_, _, err := c.do(ctx, storeSet, []byte(key), value)
	return err
}

// Get returns the value of key, waiting until some client sets it or ctx's
// deadline passes. When the deadline passes the store answers that the key
// did not appear: the error wraps ErrKeyTimeout and the client stays usable.
// Cancelling ctx returns an error wrapping context.Canceled and closes the
// client (see doWait for the whole contract).
func (c *StoreClient) Get(ctx context.Context, key string) ([]byte, error) {
	status, out, err := c.do(ctx, storeGet, []byte(key))
	if err != nil {
		return nil, err
	}
	if status == respTimeout {
		return nil, fmt.Errorf("%w: %q", ErrKeyTimeout, key)
	}
	if len(out) != 1 {
		return nil, fmt.Errorf("pg: store %s: malformed get reply", c.addr)
	}
	return out[0], nil
}

// GetWait is Get with the wait bounded by wait rather than by ctx's
// deadline (ctx still cancels it): after wait the error wraps
// ErrKeyTimeout and the client stays usable, which makes it the call for
// polling a key.
func (c *StoreClient) GetWait(ctx context.Context, key string, wait time.Duration) ([]byte, error) {
	status, out, err := c.doWait(ctx, wait, storeGet, []byte(key))
	if err != nil {
		return nil, err
	}
	if status == respTimeout {
		return nil, fmt.Errorf("%w: %q", ErrKeyTimeout, key)
	}
	if len(out) != 1 {
		return nil, fmt.Errorf("pg: store %s: malformed get reply", c.addr)
	}
	return out[0], nil
}

// Add atomically adds delta to the counter under key (absent = 0) and
// returns the new value.
func (c *StoreClient) Add(ctx context.Context, key string, delta int64) (int64, error) {
	_, out, err := c.do(ctx, storeAdd, []byte(key), binary.LittleEndian.AppendUint64(nil, uint64(delta)))
	if err != nil {
		return 0, err
	}
	if len(out) != 1 || len(out[0]) != 8 {
		return 0, fmt.Errorf("pg: store %s: malformed add reply", c.addr)
	}
	return int64(binary.LittleEndian.Uint64(out[0])), nil
}

// Check reports, without waiting, which of keys exist.
func (c *StoreClient) Check(ctx context.Context, keys ...string) ([]bool, error) {
	args := make([][]byte, len(keys))
	for i, k := range keys {
		args[i] = []byte(k)
	}
	_, out, err := c.do(ctx, storeCheck, args...)
	if err != nil {
		return nil, err
	}
	if len(out) != 1 || len(out[0]) != len(keys) {
		return nil, fmt.Errorf("pg: store %s: malformed check reply", c.addr)
	}
	res := make([]bool, len(keys))
	for i, b := range out[0] {
		res[i] = b == 1
	}
	return res, nil
}

// Delete removes key.
func (c *StoreClient) Delete(ctx context.Context, key string) error {
	_, _, err := c.do(ctx, storeDelete, []byte(key))
	return err
}
