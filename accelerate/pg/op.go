package pg

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"
)

// Operation codes carried in message headers.
const (
	opBarrier   = 1
	opBroadcast = 2
	opAllReduce = 3
	opReduce    = 4
	opGather    = 5
	opAllGather = 6
	// opReduceScatter and opAllGatherInto are the tensor collectives of
	// sharded training (scatter.go).
	opReduceScatter = 7
	opAllGatherInto = 8
)

var opNames = map[byte]string{
	opBarrier: "barrier", opBroadcast: "broadcast", opAllReduce: "all_reduce",
	opReduce: "reduce", opGather: "gather", opAllGather: "all_gather",
	opReduceScatter: "reduce_scatter", opAllGatherInto: "all_gather_into_tensor",
}

// Element types carried in message headers.
const (
	dtBytes    = 1
	dtFloat32  = 2
	dtFloat64  = 3
	dtFloat16  = 4
	dtBFloat16 = 5
)

var dtNames = map[byte]string{dtBytes: "bytes", dtFloat32: "float32", dtFloat64: "float64", dtFloat16: "float16", dtBFloat16: "bfloat16"}

const (
	hdrLen   = 24
	hdrMagic = 0x4741 // "GA"
)

// header precedes the data of every collective on every link.
type header struct {
	op, dtype, redop byte
	seq              uint32
	root             uint32
	count            uint64
}

func (h header) bytes() []byte {
	b := make([]byte, hdrLen)
	binary.LittleEndian.PutUint16(b[0:], hdrMagic)
	b[2], b[3], b[4] = h.op, h.dtype, h.redop
	binary.LittleEndian.PutUint32(b[8:], h.seq)
	binary.LittleEndian.PutUint32(b[12:], h.root)
	binary.LittleEndian.PutUint64(b[16:], h.count)
	return b
}

func (h header) describe() string {
	s := fmt.Sprintf("%s #%d", opNames[h.op], h.seq)
	var extra []string
	if h.dtype != dtBytes {
		extra = append(extra, fmt.Sprintf("%d %s", h.count, dtNames[h.dtype]))
	}
	if h.op == opAllReduce || h.op == opReduce {
		extra = append(extra, ReduceOp(h.redop).String())
	}
	if h.op == opBroadcast || h.op == opReduce || h.op == opGather {
		extra = append(extra, fmt.Sprintf("root %d", h.root))
	}
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, ", ") + ")"
	}
	return s
}

// opCtx is one running collective.
type opCtx struct {
	g        *Group
	ctx      context.Context
	name     string
	hdr      header // what this rank is doing; count is per-call
	deadline time.Time
	timeout  time.Duration

	mu  sync.Mutex
	err error
}

// run executes fn as collective number g.seq+1 under the group lock, with
// every peer connection bounded by the group timeout and ctx. The first
// failure reported through o.fail wins; it breaks the group.
func (g *Group) run(ctx context.Context, name string, h header, fn func(o *opCtx) error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if p := g.parent; p != nil { // the connections are the parent's: one collective at a time on them
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.isClosed() {
			return fmt.Errorf("pg: %s: %w", name, ErrClosed)
		}
		if p.broken != nil {
			return fmt.Errorf("pg: %s: the process group is unusable after an earlier failure: %w", name, p.broken)
		}
	}
	if g.isClosed() {
		return fmt.Errorf("pg: %s: %w", name, ErrClosed)
	}
	if g.broken != nil {
		return fmt.Errorf("pg: %s: the process group is unusable after an earlier failure: %w", name, g.broken)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("pg: %s: %w", name, err)
	}
	g.seq++
	h.seq = g.seq
	start := time.Now()
	deadline := start.Add(g.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	o := &opCtx{g: g, ctx: ctx, name: name, hdr: h, deadline: deadline, timeout: deadline.Sub(start).Round(time.Millisecond)}
	for _, p := range g.peers {
		if p != nil {
			_ = p.conn.SetDeadline(deadline)
		}
	}
	stop := context.AfterFunc(ctx, g.interrupt)
	err := fn(o)
	stop()
	if err == nil {
		err = o.firstErr()
	}
	if err != nil {
		if first := o.firstErr(); first != nil {
			err = first
		}
		g.broken = err
		if g.parent != nil {
			g.parent.broken = err
		}
		g.closeConns()
	}
	return err
}

func (o *opCtx) firstErr() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// fail records err (attributed to rank; -1 for a local failure) as the
// operation's error if it is the first, and interrupts every other blocked
// part of the operation. It returns the recorded first error.
func (o *opCtx) fail(rank int, err error) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err == nil {
		o.err = o.classify(rank, err)
		o.g.interrupt()
	}
	return o.err
}

func (o *opCtx) classify(rank int, err error) error {
	switch {
	case o.g.isClosed():
		return fmt.Errorf("pg: %s: %w", o.name, ErrClosed)
	case errors.Is(o.ctx.Err(), context.Canceled):
		return fmt.Errorf("pg: %s interrupted: %w", o.name, o.ctx.Err())
	case errors.Is(err, ErrMismatch), rank < 0:
		return err
	case isTimeout(err) || errors.Is(o.ctx.Err(), context.DeadlineExceeded):
		return &RankError{Rank: o.g.globalRank(rank), Op: o.name, Timeout: o.timeout, Err: err}
	default:
		return &RankError{Rank: o.g.globalRank(rank), Op: o.name, Err: err}
	}
}

// send writes the header (with count) and then the payload parts to p.
func (o *opCtx) send(p *peer, count uint64, parts ...[]byte) error {
	h := o.hdr
	h.count = count
	bufs := make(net.Buffers, 0, 1+len(parts))
	bufs = append(bufs, h.bytes())
	for _, b := range parts {
		if len(b) > 0 {
			bufs = append(bufs, b)
		}
	}
	if _, err := bufs.WriteTo(p.conn); err != nil {
		return o.fail(p.rank, err)
	}
	return nil
}

// write writes raw bytes (no header) to p.
func (o *opCtx) write(p *peer, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if _, err := p.conn.Write(b); err != nil {
		return o.fail(p.rank, err)
	}
	return nil
}

// read reads exactly len(b) raw bytes from p.
func (o *opCtx) read(p *peer, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if _, err := io.ReadFull(p.r, b); err != nil {
		return o.fail(p.rank, err)
	}
	return nil
}

// recvHeader reads p's header and checks that p is in the same collective.
// wantCount < 0 accepts any count. It returns the peer's count.
func (o *opCtx) recvHeader(p *peer, wantCount int64) (uint64, error) {
	var b [hdrLen]byte
	if err := o.read(p, b[:]); err != nil {
		return 0, err
	}
	got := header{
		op: b[2], dtype: b[3], redop: b[4],
		seq:   binary.LittleEndian.Uint32(b[8:]),
		root:  binary.LittleEndian.Uint32(b[12:]),
		count: binary.LittleEndian.Uint64(b[16:]),
	}
	mine := o.hdr
	if binary.LittleEndian.Uint16(b[0:]) != hdrMagic {
		return 0, o.fail(p.rank, fmt.Errorf("%w: garbled message from rank %d during %s", ErrMismatch, p.rank, o.name))
	}
	if wantCount >= 0 {
		mine.count = uint64(wantCount)
	} else {
		mine.count = got.count
	}
	if got != mine {
		return 0, o.fail(p.rank, fmt.Errorf("%w: rank %d called %s while rank %d called %s; every rank must call the same collectives in the same order with matching lengths",
			ErrMismatch, o.g.globalRank(p.rank), got.describe(), o.g.globalRank(o.g.rank), mine.describe()))
	}
	return got.count, nil
}

// parallel runs fns concurrently and waits for all of them.
func parallel(fns ...func()) {
	var wg sync.WaitGroup
	wg.Add(len(fns) - 1)
	for _, f := range fns[1:] {
		go func() { defer wg.Done(); f() }()
	}
	fns[0]()
	wg.Wait()
}
