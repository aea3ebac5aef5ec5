package kernel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/security/null"
	"github.com/sirupsen/logrus"
)

// This file is the kernel's ZeroMQ endpoint layer. zmq4 does the ZMTP 3.0
// greeting and NULL handshake (zmq4.Open); framing, routing, subscriptions
// and queues are done here, because zmq4 v0.17.0's sockets
//   - never hand XPUB subscriptions to the application (JEP 65 needs them),
//   - keep one unbounded PUB queue for all subscribers and drop it on Close,
//   - surface ZMTP PING commands as data on ROUTER sockets and answer PONG
//     from the reader goroutine, racing with the writer.
// Each accepted connection ("peer") has one reader goroutine and one writer
// goroutine that owns a bounded queue and is the only one writing to the
// net.Conn, so frames of different messages never interleave.

const (
	maxFrameSize      = 512 << 20 // a larger frame is a broken or hostile peer
	peerQueueLen      = 256       // messages queued per peer before producers wait
	handshakeDeadline = 10 * time.Second
)

// peerEnqueueWait is how long a producer waits for a peer whose queue is
// full before that peer is disconnected (a var for tests).
var peerEnqueueWait = 5 * time.Second

type sockKind int

const (
	kindRouter sockKind = iota // shell, control, stdin
	kindPub                    // iopub (XPUB semantics: subscriptions are seen)
	kindEcho                   // hb (REP semantics: every message echoed)
)

// zsock is a bound endpoint with its connected peers.
type zsock struct {
	name string
	kind sockKind
	ln   net.Listener
	log  *logrus.Logger

	// in receives [routing-id, frames...] for router sockets.
	in chan [][]byte
	// onSubscribe is called (with mu held, before any later publish reaches
	// the peer) when a pub peer subscribes to a topic; what it returns is
	// queued to that peer only.
	onSubscribe func(topic []byte) [][]byte

	mu     sync.Mutex
	peers  map[*peer]struct{}
	byID   map[string][]*peer // newest last: it gets the messages
	nextID uint32

	closing chan struct{}
	closed  atomic.Bool
	wg      sync.WaitGroup
}

type outMsg struct {
	frames [][]byte
	cmd    bool
}

type peer struct {
	s      *zsock
	nc     net.Conn
	id     []byte
	out    chan outMsg
	done   chan struct{} // closed when the peer is gone
	once   sync.Once
	topics [][]byte // pub only; guarded by s.mu
}

// listen binds one endpoint. For tcp, ip "*" means every interface; port 0
// picks a free port (see port()).
func listen(name string, kind sockKind, transport, ip string, port int, log *logrus.Logger) (*zsock, error) {
	var (
		ln  net.Listener
		err error
	)
	switch transport {
	case "tcp", "":
		host := ip
		if host == "*" {
			host = ""
		}
		ln, err = net.Listen("tcp", net.JoinHostPort(host, fmt.Sprint(port)))
	case "ipc":
		path := fmt.Sprintf("%s-%d", ip, port)
		// libzmq unlinks a stale socket file before binding; do the same,
		// but never remove something that is not a socket.
		if fi, e := os.Lstat(path); e == nil && fi.Mode()&os.ModeSocket != 0 {
			_ = os.Remove(path)
		}
		ln, err = net.Listen("unix", path)
	default:
		return nil, fmt.Errorf("%s: unsupported transport %q (want tcp or ipc)", name, transport)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: bind: %w", name, err)
	}
	s := &zsock{
		name:    name,
		kind:    kind,
		ln:      ln,
		log:     log,
		in:      make(chan [][]byte, 64),
		peers:   make(map[*peer]struct{}),
		byID:    make(map[string][]*peer),
		closing: make(chan struct{}),
	}
	s.wg.Add(1)
	go s.acceptLoop()
	return s, nil
}

// port is the bound tcp port (0 for ipc).
func (s *zsock) port() int {
	if a, ok := s.ln.Addr().(*net.TCPAddr); ok {
		return a.Port
	}
	return 0
}

func (s *zsock) zmqType() zmq4.SocketType {
	switch s.kind {
	case kindPub:
		return zmq4.XPub
	case kindEcho:
		return zmq4.Rep
	}
	return zmq4.Router
}

func (s *zsock) acceptLoop() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			if s.closed.Load() {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			s.log.WithError(err).Warnf("%s: accept failed", s.name)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		s.wg.Add(1)
		go s.handshake(nc)
	}
}

func (s *zsock) handshake(nc net.Conn) {
	defer s.wg.Done()
	_ = nc.SetDeadline(time.Now().Add(handshakeDeadline))
	zc, err := zmq4.Open(nc, null.Security(), s.zmqType(), nil, true, nil)
	if err != nil {
		s.log.WithError(err).Debugf("%s: ZMTP handshake with %s failed", s.name, nc.RemoteAddr())
		_ = nc.Close()
		return
	}
	_ = nc.SetDeadline(time.Time{})
	p := &peer{s: s, nc: nc, out: make(chan outMsg, peerQueueLen), done: make(chan struct{})}

	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		_ = nc.Close()
		return
	}
	if s.kind == kindRouter {
		id := zc.Peer.Meta["Identity"]
		if id == "" {
			// libzmq's scheme for anonymous peers: 0x00 + a 32-bit counter.
			s.nextID++
			b := make([]byte, 5)
			binary.BigEndian.PutUint32(b[1:], s.nextID)
			id = string(b)
		}
		p.id = []byte(id)
		// Two connections may share an identity (jupyter_client gives every
		// client of one KernelManager the session's identity). The newest
		// gets the messages; when it goes, the previous one gets them again.
		s.byID[id] = append(s.byID[id], p)
	}
	s.peers[p] = struct{}{}
	s.mu.Unlock()
	s.log.Debugf("%s: peer connected from %s", s.name, nc.RemoteAddr())

	s.wg.Add(2)
	go p.writeLoop()
	go p.readLoop()
}

func (p *peer) gone() {
	p.once.Do(func() {
		close(p.done)
		_ = p.nc.Close()
		s := p.s
		s.mu.Lock()
		delete(s.peers, p)
		if p.id != nil {
			list := s.byID[string(p.id)]
			for i, q := range list {
				if q == p {
					list = append(list[:i:i], list[i+1:]...)
					break
				}
			}
			if len(list) == 0 {
				delete(s.byID, string(p.id))
			} else {
				s.byID[string(p.id)] = list
			}
		}
		s.mu.Unlock()
	})
}

// readFrame reads one ZMTP frame: its flags and body.
func readFrame(r *bufio.Reader) (flags byte, body []byte, err error) {
	var hdr [9]byte
	if _, err = io.ReadFull(r, hdr[:2]); err != nil {
		return 0, nil, err
	}
	flags = hdr[0]
	size := uint64(hdr[1])
	if flags&0x02 != 0 { // long frame: 8-byte size, first byte already read
		if _, err = io.ReadFull(r, hdr[2:9]); err != nil {
			return 0, nil, err
		}
		size = binary.BigEndian.Uint64(hdr[1:9])
	}
	if size > maxFrameSize {
		return 0, nil, fmt.Errorf("frame of %d bytes exceeds the %d byte limit", size, maxFrameSize)
	}
	body = make([]byte, size)
	_, err = io.ReadFull(r, body)
	return flags, body, err
}

func writeFrame(w *bufio.Writer, body []byte, more, cmd bool) error {
	var flags byte
	if more {
		flags |= 0x01
	}
	if cmd {
		flags |= 0x04
	}
	if len(body) > 255 {
		flags |= 0x02
		var hdr [9]byte
		hdr[0] = flags
		binary.BigEndian.PutUint64(hdr[1:], uint64(len(body)))
		if _, err := w.Write(hdr[:]); err != nil {
			return err
		}
	} else if _, err := w.Write([]byte{flags, byte(len(body))}); err != nil {
		return err
	}
	_, err := w.Write(body)
	return err
}

func (p *peer) readLoop() {
	defer p.s.wg.Done()
	defer p.gone()
	r := bufio.NewReaderSize(p.nc, 64<<10)
	var frames [][]byte
	for {
		flags, body, err := readFrame(r)
		if err != nil {
			if !p.s.closed.Load() && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				p.s.log.WithError(err).Debugf("%s: peer read failed", p.s.name)
			}
			return
		}
		if flags&0x04 != 0 { // command frame
			p.command(body)
			continue
		}
		frames = append(frames, body)
		if flags&0x01 != 0 {
			continue
		}
		msg := frames
		frames = nil
		switch p.s.kind {
		case kindEcho:
			p.enqueue(outMsg{frames: msg})
		case kindPub:
			p.subscription(msg)
		case kindRouter:
			full := make([][]byte, 0, len(msg)+1)
			full = append(full, p.id)
			full = append(full, msg...)
			select {
			case p.s.in <- full:
			case <-p.s.closing:
				return
			case <-p.done:
				return
			}
		}
	}
}

// command handles ZMTP commands after the handshake: PING gets a PONG with
// the ping's context; SUBSCRIBE/CANCEL (ZMTP 3.1) are subscriptions.
func (p *peer) command(body []byte) {
	if len(body) == 0 || int(body[0])+1 > len(body) {
		return
	}
	name := string(body[1 : 1+body[0]])
	data := body[1+body[0]:]
	switch name {
	case "PING":
		ctx := []byte{}
		if len(data) > 2 {
			ctx = data[2:]
		}
		if len(ctx) > 16 {
			ctx = ctx[:16]
		}
		pong := append([]byte{4}, "PONG"...)
		pong = append(pong, ctx...)
		p.enqueue(outMsg{frames: [][]byte{pong}, cmd: true})
	case "SUBSCRIBE":
		if p.s.kind == kindPub {
			p.subscription([][]byte{append([]byte{1}, data...)})
		}
	case "CANCEL":
		if p.s.kind == kindPub {
			p.subscription([][]byte{append([]byte{0}, data...)})
		}
	}
}

// subscription applies a ZMTP 3.0 subscribe (0x01 topic) or unsubscribe
// (0x00 topic) message from a SUB peer.
func (p *peer) subscription(msg [][]byte) {
	if len(msg) != 1 || len(msg[0]) == 0 {
		return
	}
	topic := append([]byte(nil), msg[0][1:]...)
	s := p.s
	s.mu.Lock()
	defer s.mu.Unlock()
	switch msg[0][0] {
	case 1:
		p.topics = append(p.topics, topic)
		if s.onSubscribe != nil {
			if w := s.onSubscribe(topic); w != nil {
				// The peer's queue is empty of published messages for this
				// topic, so the welcome is the first thing it receives.
				p.enqueue(outMsg{frames: w})
			}
		}
	case 0:
		for i, t := range p.topics {
			if bytes.Equal(t, topic) {
				p.topics = append(p.topics[:i], p.topics[i+1:]...)
				break
			}
		}
	}
}

func (p *peer) subscribed(topic []byte) bool {
	for _, t := range p.topics {
		if bytes.HasPrefix(topic, t) {
			return true
		}
	}
	return false
}

// enqueue queues m for the peer. When the queue is full it waits up to
// peerEnqueueWait for the peer to drain; a peer that reads nothing for that
// long is disconnected (a libzmq frontend reconnects and, on IOPub,
// resubscribes), so one stalled frontend cannot hold up the others or grow
// memory without bound.
func (p *peer) enqueue(m outMsg) bool {
	select {
	case p.out <- m:
		return true
	case <-p.done:
		return false
	default:
	}
	t := time.NewTimer(peerEnqueueWait)
	defer t.Stop()
	select {
	case p.out <- m:
		return true
	case <-p.done:
		return false
	case <-t.C:
		p.s.log.Warnf("%s: peer %s read nothing for %v; disconnected", p.s.name, p.nc.RemoteAddr(), peerEnqueueWait)
		p.gone()
		return false
	}
}

func (p *peer) writeLoop() {
	defer p.s.wg.Done()
	defer p.gone()
	w := bufio.NewWriterSize(p.nc, 64<<10)
	for {
		var m outMsg
		select {
		case m = <-p.out:
		case <-p.done:
			return
		case <-p.s.closing:
			// Drain what is queued, then leave.
			for {
				select {
				case m = <-p.out:
					if p.write(w, m) != nil {
						return
					}
				default:
					_ = w.Flush()
					return
				}
			}
		}
		if err := p.write(w, m); err != nil {
			return
		}
		if len(p.out) == 0 {
			if err := w.Flush(); err != nil {
				return
			}
		}
	}
}

func (p *peer) write(w *bufio.Writer, m outMsg) error {
	_ = p.nc.SetWriteDeadline(time.Now().Add(30 * time.Second))
	for i, f := range m.frames {
		if err := writeFrame(w, f, i < len(m.frames)-1, m.cmd); err != nil {
			p.s.log.WithError(err).Debugf("%s: peer write failed", p.s.name)
			return err
		}
	}
	return nil
}

// send routes frames[0] (an identity) on a router socket. A message for an
// unknown identity is dropped, as libzmq does.
func (s *zsock) send(frames [][]byte) bool {
	if len(frames) < 2 {
		return false
	}
	s.mu.Lock()
	var p *peer
	if list := s.byID[string(frames[0])]; len(list) > 0 {
		p = list[len(list)-1]
	}
	s.mu.Unlock()
	if p == nil {
		s.log.Debugf("%s: no peer with identity %q; message dropped", s.name, frames[0])
		return false
	}
	return p.enqueue(outMsg{frames: frames[1:]})
}

// publish sends frames to every subscribed peer; frames[0] is the topic.
func (s *zsock) publish(frames [][]byte) {
	if len(frames) == 0 {
		return
	}
	s.mu.Lock()
	var targets []*peer
	for p := range s.peers {
		if p.subscribed(frames[0]) {
			targets = append(targets, p)
		}
	}
	s.mu.Unlock()
	for _, p := range targets {
		p.enqueue(outMsg{frames: frames})
	}
}

// close stops accepting, lets writers drain their queues for up to drain,
// then closes every connection and waits for the goroutines.
func (s *zsock) close(drain time.Duration) {
	if s.closed.Swap(true) {
		return
	}
	_ = s.ln.Close()
	close(s.closing)
	deadline := time.Now().Add(drain)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		pending := 0
		for p := range s.peers {
			pending += len(p.out)
		}
		s.mu.Unlock()
		if pending == 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.mu.Lock()
	var all []*peer
	for p := range s.peers {
		all = append(all, p)
	}
	s.mu.Unlock()
	for _, p := range all {
		// Give the writer a moment to flush what it already took.
		select {
		case <-p.done:
		case <-time.After(50 * time.Millisecond):
		}
		p.gone()
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		s.log.Warnf("%s: connections did not close in time", s.name)
	}
}

// recv returns the next routed message or ctx's end.
func (s *zsock) recv(ctx context.Context) ([][]byte, error) {
	select {
	case m := <-s.in:
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.closing:
		return nil, net.ErrClosed
	}
}
