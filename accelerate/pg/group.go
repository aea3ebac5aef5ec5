package pg

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/sirupsen/logrus"
)

// DefaultTimeout is the default bound on joining and on every collective:
// Accelerate's default for the gloo backend (InitProcessGroupKwargs, 1800 s).
const DefaultTimeout = 1800 * time.Second

const (
	peerLabel   = "peer"
	readBufSize = 256 << 10
)

// Config describes one rank joining a group.
type Config struct {
	Rank      int    // this process's global rank, 0 <= Rank < WorldSize
	WorldSize int    // number of ranks
	StoreAddr string // host:port of the rendezvous store
	Secret    string // the launch secret; required

	// Timeout bounds the rendezvous and, later, every collective.
	// 0 means DefaultTimeout.
	Timeout time.Duration

	// HostStore makes this rank try to host the store at StoreAddr first
	// (c10d-style rendezvous: the first rank to bind it hosts it). If the
	// address cannot be bound (already hosted, not a local address), the
	// rank connects as a client. A hosted store is closed when Join returns,
	// since after Join no rank uses the store any more.
	HostStore bool

	// ListenHost is the host the rank listens on for its peers and advertises
	// to them. Empty means the local address of its connection to the store,
	// which is reachable by the other ranks whenever the store is.
	ListenHost string

	// Namespace prefixes the store keys, so that a restarted group (or a
	// second group on the same store) does not see stale registrations.
	Namespace string

	// Logger receives diagnostics (default logrus.StandardLogger()).
	Logger logrus.FieldLogger
}

// Group is a joined process group. Collectives on it are serialized; Close
// may be called at any time, from any goroutine.
type Group struct {
	rank, size int
	log        logrus.FieldLogger

	mu      sync.Mutex // held for the duration of a collective
	timeout time.Duration
	seq     uint32
	broken  error
	scratch []byte
	// shardWork is reduce-scatter's copy of its input (scatter.go), kept
	// from call to call as scratch is.
	shardWork []byte

	peers []*peer // by rank; nil at this rank

	// A sub-group (Sub): the group whose connections it uses, and the
	// ranks there of its ranks.
	parent *Group
	global []int

	closeMu sync.Mutex
	closed  bool
}

type peer struct {
	rank int
	conn *net.TCPConn
	r    *bufio.Reader
}

var nativeLittleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// Join rendezvouses with the other ranks through the store and connects to
// each of them. It returns when every rank has joined, or an error naming the
// ranks that did not join within cfg.Timeout (or before ctx ends).
func Join(ctx context.Context, cfg Config) (_ *Group, err error) {
	if cfg.WorldSize < 1 {
		return nil, fmt.Errorf("pg: world size must be >= 1, got %d", cfg.WorldSize)
	}
	if cfg.Rank < 0 || cfg.Rank >= cfg.WorldSize {
		return nil, fmt.Errorf("pg: rank %d out of range for world size %d", cfg.Rank, cfg.WorldSize)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = logrus.StandardLogger()
	}
	g := &Group{
		rank:    cfg.Rank,
		size:    cfg.WorldSize,
		log:     cfg.Logger.WithField("rank", cfg.Rank),
		timeout: cfg.Timeout,
		peers:   make([]*peer, cfg.WorldSize),
	}
	if cfg.WorldSize == 1 {
		return g, nil
	}
	if cfg.Secret == "" {
		return nil, errors.New("pg: Join: empty launch secret")
	}
	if cfg.StoreAddr == "" {
		return nil, errors.New("pg: Join: no store address")
	}
	jctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()

	if cfg.HostStore {
		if st, herr := NewStore(cfg.StoreAddr, cfg.Secret, WithStoreLogger(cfg.Logger)); herr == nil {
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { defer wg.Done(); _ = st.Serve(context.Background()) }()
			defer func() { st.Close(); wg.Wait() }()
			g.log.Debugf("pg: hosting the rendezvous store at %s", st.Addr())
		} else {
			g.log.Debugf("pg: not hosting the store (%v); connecting to it", herr)
		}
	}

	sc, err := DialStore(jctx, cfg.StoreAddr, cfg.Secret)
	if err != nil {
		if jctx.Err() != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("pg: rank %d could not reach the rendezvous store at %s within %s: %w", cfg.Rank, cfg.StoreAddr, cfg.Timeout, err)
		}
		return nil, err
	}
	defer sc.Close()

	host := cfg.ListenHost
	if host == "" {
		host, _, _ = net.SplitHostPort(sc.LocalAddr().String())
	}
	ln, err := Listen(net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, err
	}
	defer ln.Close()

	ns := cfg.Namespace + "/pg/"
	n, err := sc.Add(jctx, ns+"rank/"+strconv.Itoa(cfg.Rank), 1)
	if err != nil {
		return nil, err
	}
	if n > 1 {
		return nil, fmt.Errorf("pg: rank %d joined twice (two processes were given RANK=%d)", cfg.Rank, cfg.Rank)
	}
	if err := sc.Set(jctx, ns+"addr/"+strconv.Itoa(cfg.Rank), []byte(ln.Addr().String())); err != nil {
		return nil, err
	}

	defer func() {
		if err != nil {
			g.closeConns()
		}
	}()

	// Accept the higher ranks, dial the lower ones.
	type accepted struct {
		p   *peer
		err error
	}
	want := cfg.WorldSize - 1 - cfg.Rank
	acc := make(chan accepted, want)
	var accWG sync.WaitGroup
	if want > 0 {
		accWG.Add(1)
		go func() { // owner: Join; ends when ln is closed (deferred above)
			defer accWG.Done()
			var hs sync.WaitGroup
			defer hs.Wait()
			for {
				c, aerr := ln.Accept()
				if aerr != nil {
					return
				}
				hs.Add(1)
				go func() {
					defer hs.Done()
					p, herr := g.acceptPeer(c.(*net.TCPConn), []byte(cfg.Secret))
					if herr != nil {
						c.Close()
						var rej *rejectError
						if errors.As(herr, &rej) {
							g.log.WithField("remote", c.RemoteAddr().String()).Warnf("pg: refused peer connection: %s", rej.reason)
						}
						return
					}
					select {
					case acc <- accepted{p: p}:
					default: // surplus connection
						p.conn.Close()
					}
				}()
			}
		}()
	}
	defer func() {
		ln.Close()
		accWG.Wait()
	}()

	missing := func() error {
		keys := make([]string, cfg.WorldSize)
		for i := range keys {
			keys[i] = ns + "addr/" + strconv.Itoa(i)
		}
		cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer ccancel()
		present, cerr := sc.Check(cctx, keys...)
		if cerr != nil {
			return nil
		}
		var miss []int
		for i, ok := range present {
			if !ok {
				miss = append(miss, i)
			}
		}
		if len(miss) == 0 {
			return nil
		}
		return &MissingRanksError{Ranks: miss, Timeout: cfg.Timeout}
	}
	joinErr := func(rank int, e error) error {
		if ctx.Err() != nil {
			return fmt.Errorf("pg: join interrupted: %w", ctx.Err())
		}
		if jctx.Err() != nil || errors.Is(e, ErrKeyTimeout) || isTimeout(e) {
			if m := missing(); m != nil {
				return m
			}
			return &RankError{Rank: rank, Op: "join", Timeout: cfg.Timeout, Err: e}
		}
		return &RankError{Rank: rank, Op: "join", Err: e}
	}

	for j := 0; j < cfg.Rank; j++ {
		addr, gerr := sc.Get(jctx, ns+"addr/"+strconv.Itoa(j))
		if gerr != nil {
			return nil, joinErr(j, gerr)
		}
		p, derr := g.dialPeer(jctx, j, string(addr), []byte(cfg.Secret))
		if derr != nil {
			if errors.Is(derr, ErrAuth) || errors.Is(derr, ErrMismatch) {
				return nil, derr
			}
			return nil, joinErr(j, derr)
		}
		g.peers[j] = p
	}
	for got := 0; got < want; got++ {
		select {
		case a := <-acc:
			if g.peers[a.p.rank] != nil {
				a.p.conn.Close()
				return nil, fmt.Errorf("pg: two processes connected as rank %d", a.p.rank)
			}
			g.peers[a.p.rank] = a.p
		case <-jctx.Done():
			for j := cfg.Rank + 1; j < cfg.WorldSize; j++ {
				if g.peers[j] == nil {
					return nil, joinErr(j, jctx.Err())
				}
			}
		}
	}
	for _, p := range g.peers {
		if p != nil {
			if sockBuf > 0 {
				_ = p.conn.SetReadBuffer(sockBuf)
			}
			if sockBuf > 0 {
				_ = p.conn.SetWriteBuffer(sockBuf)
			}
			_ = p.conn.SetNoDelay(true)
		}
	}
	// Every rank is connected to us; make sure every rank is connected to
	// everyone before anyone stops using the store.
	if err := g.barrier(jctx, "join"); err != nil {
		return nil, err
	}
	return g, nil
}

// peer hello, after authentication: rank u32, world u32, little-endian u8,
// then (dialer only, as reply) nothing. The acceptor answers with one byte.
func helloBytes(rank, world int) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(rank))
	b = binary.LittleEndian.AppendUint32(b, uint32(world))
	le := byte(0)
	if nativeLittleEndian {
		le = 1
	}
	return append(b, le)
}

func (g *Group) acceptPeer(c *net.TCPConn, secret []byte) (*peer, error) {
	if err := serverHandshake(c, secret, peerLabel); err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
	defer c.SetDeadline(time.Time{})
	var h [9]byte
	if _, err := readFullConn(c, h[:]); err != nil {
		return nil, err
	}
	rank := int(binary.LittleEndian.Uint32(h[0:4]))
	world := int(binary.LittleEndian.Uint32(h[4:8]))
	mine := helloBytes(g.rank, g.size)
	if world != g.size || rank <= g.rank || rank >= g.size || h[8] != mine[8] {
		_, _ = c.Write([]byte{1})
		return nil, fmt.Errorf("%w: peer claims rank %d of %d (byte order %d); this is rank %d of %d", ErrMismatch, rank, world, h[8], g.rank, g.size)
	}
	if _, err := c.Write([]byte{0}); err != nil {
		return nil, err
	}
	return &peer{rank: rank, conn: c, r: bufio.NewReaderSize(c, readBufSize)}, nil
}

func (g *Group) dialPeer(ctx context.Context, rank int, addr string, secret []byte) (*peer, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	tc := c.(*net.TCPConn)
	dl, _ := ctx.Deadline()
	if err := clientHandshake(tc, secret, peerLabel, "rank "+strconv.Itoa(rank)+" ("+addr+")", dl); err != nil {
		c.Close()
		return nil, err
	}
	_ = tc.SetDeadline(time.Now().Add(handshakeTimeout))
	defer tc.SetDeadline(time.Time{})
	if _, err := tc.Write(helloBytes(g.rank, g.size)); err != nil {
		c.Close()
		return nil, err
	}
	var ok [1]byte
	if _, err := readFullConn(tc, ok[:]); err != nil {
		c.Close()
		return nil, err
	}
	if ok[0] != 0 {
		c.Close()
		return nil, fmt.Errorf("%w: rank %d refused this rank (%d of %d): different world size or byte order", ErrMismatch, rank, g.rank, g.size)
	}
	return &peer{rank: rank, conn: tc, r: bufio.NewReaderSize(tc, readBufSize)}, nil
}

func readFullConn(c net.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := c.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// Rank returns this process's rank.
func (g *Group) Rank() int { return g.rank }

// Size returns the number of ranks.
func (g *Group) Size() int { return g.size }

// Timeout returns the bound applied to each collective.
func (g *Group) Timeout() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.timeout
}

// SetTimeout changes the bound applied to each later collective (d <= 0
// restores DefaultTimeout).
func (g *Group) SetTimeout(d time.Duration) {
	if d <= 0 {
		d = DefaultTimeout
	}
	g.mu.Lock()
	g.timeout = d
	g.mu.Unlock()
}

// Close tears the group down: every peer connection is closed, so a
// collective in progress here fails with ErrClosed and the other ranks see
// this rank close its connection. Safe to call more than once.
func (g *Group) Close() error {
	g.closeMu.Lock()
	if g.closed {
		g.closeMu.Unlock()
		return nil
	}
	g.closed = true
	g.closeMu.Unlock()
	if g.parent == nil { // a sub-group's connections are its parent's
		g.closeConns()
	}
	return nil
}

func (g *Group) isClosed() bool {
	g.closeMu.Lock()
	defer g.closeMu.Unlock()
	return g.closed
}

func (g *Group) closeConns() {
	for _, p := range g.peers {
		if p != nil {
			p.conn.Close()
		}
	}
}

// interrupt makes every blocked read or write on the peer connections fail
// at once (used when one part of a collective has failed).
func (g *Group) interrupt() {
	past := time.Unix(1, 0)
	for _, p := range g.peers {
		if p != nil {
			_ = p.conn.SetDeadline(past)
		}
	}
}
