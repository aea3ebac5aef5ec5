package pg

import (
	"context"
	"fmt"
	"unsafe"
)

// Tuning knobs (variables so that benchmarks can explore them).
var (
	// directMaxBytes: all-reduces and reduces of at most this many bytes use
	// a direct exchange (one round, latency-bound) instead of the ring.
	directMaxBytes = 32 << 10
	// segmentBytes: the ring and the broadcast chain move data in segments
	// of this size, so that receiving, reducing and forwarding overlap.
	// Measured on loopback (bench/allreduce): 2 MiB beat 128 KiB-1 MiB
	// (fewer goroutine hand-offs) and 4-32 MiB (less overlap).
	segmentBytes = 2 << 20
	// sockBuf, when > 0, sets the peer sockets' kernel buffers; 0 leaves
	// Linux's autotuning, which measured as fast as 4 or 16 MiB.
	sockBuf = 0
)

func (g *Group) next() *peer { return g.peers[(g.rank+1)%g.size] }
func (g *Group) prev() *peer { return g.peers[(g.rank-1+g.size)%g.size] }

// Barrier returns once every rank has entered it (dissemination barrier,
// ceil(log2 n) rounds).
func (g *Group) Barrier(ctx context.Context) error {
	if g.size == 1 {
		return g.single()
	}
	return g.barrier(ctx, "barrier")
}

func (g *Group) single() error {
	if g.isClosed() {
		return ErrClosed
	}
	return nil
}

func (g *Group) barrier(ctx context.Context, name string) error {
	return g.run(ctx, name, header{op: opBarrier, dtype: dtBytes}, func(o *opCtx) error {
		n, r := g.size, g.rank
		for k := 1; k < n; k <<= 1 {
			if err := o.send(g.peers[(r+k)%n], 0); err != nil {
				return err
			}
			if _, err := o.recvHeader(g.peers[(r-k+n)%n], 0); err != nil {
				return err
			}
		}
		return nil
	})
}

// BroadcastBytes sends root's data to every rank and returns it (on root,
// data itself). data is ignored on the other ranks.
func (g *Group) BroadcastBytes(ctx context.Context, data []byte, root int) ([]byte, error) {
	if err := g.checkRoot(root); err != nil {
		return nil, err
	}
	if g.size == 1 {
		return data, g.single()
	}
	var out []byte
	err := g.run(ctx, "broadcast", header{op: opBroadcast, dtype: dtBytes, root: uint32(root)}, func(o *opCtx) error {
		if g.rank == root {
			out = data
			return chainBroadcast(o, root, data, nil)
		}
		return chainBroadcast(o, root, nil, func(count uint64) ([]byte, error) {
			out = make([]byte, count)
			return out, nil
		})
	})
	return out, err
}

// BroadcastFloat32 overwrites buf on every rank with root's buf. Every rank
// must pass a buffer of the same length.
func (g *Group) BroadcastFloat32(ctx context.Context, buf []float32, root int) error {
	return broadcastFloats(ctx, g, buf, root)
}

// BroadcastFloat64 overwrites buf on every rank with root's buf. Every rank
// must pass a buffer of the same length.
func (g *Group) BroadcastFloat64(ctx context.Context, buf []float64, root int) error {
	return broadcastFloats(ctx, g, buf, root)
}

func broadcastFloats[T float](ctx context.Context, g *Group, buf []T, root int) error {
	if err := g.checkRoot(root); err != nil {
		return err
	}
	if g.size == 1 {
		return g.single()
	}
	h := header{op: opBroadcast, dtype: dtypeOf[T](), root: uint32(root), count: uint64(len(buf))}
	return g.run(ctx, "broadcast", h, func(o *opCtx) error {
		b := asBytes(buf)
		if g.rank == root {
			return chainBroadcast(o, root, b, nil)
		}
		return chainBroadcast(o, root, nil, func(count uint64) ([]byte, error) {
			if count != uint64(len(buf)) {
				return nil, o.fail(-1, fmt.Errorf("%w: broadcast from rank %d carries %d elements but rank %d's buffer holds %d", ErrMismatch, root, count, g.rank, len(buf)))
			}
			return b, nil
		})
	})
}

// chainBroadcast passes data along the ring starting at root, segment by
// segment: each rank forwards a segment to the next while receiving the
// following one. On non-root ranks alloc receives the announced length
// (elements, for typed data) and returns the destination bytes.
func chainBroadcast(o *opCtx, root int, data []byte, alloc func(count uint64) ([]byte, error)) error {
	g := o.g
	n := g.size
	last := (g.rank+1)%n == root
	next, prev := g.next(), g.prev()
	count := uint64(len(data))
	if o.hdr.dtype != dtBytes {
		count = o.hdr.count
	}
	if g.rank == root {
		if err := o.send(next, count); err != nil {
			return err
		}
		for off := 0; off < len(data); off += segmentBytes {
			if err := o.write(next, data[off:min(off+segmentBytes, len(data))]); err != nil {
				return err
			}
		}
		return nil
	}
	want := int64(-1)
	if o.hdr.dtype != dtBytes {
		want = int64(o.hdr.count)
	}
	got, err := o.recvHeader(prev, want)
	if err != nil {
		return err
	}
	dst, err := alloc(got)
	if err != nil {
		return err
	}
	if last {
		return o.read(prev, dst)
	}
	nseg := (len(dst) + segmentBytes - 1) / segmentBytes
	ready := make(chan int, nseg)
	var sendErr error
	parallel(func() {
		defer close(ready)
		for off := 0; off < len(dst); off += segmentBytes {
			end := min(off+segmentBytes, len(dst))
			if o.read(prev, dst[off:end]) != nil {
				return
			}
			ready <- end
		}
	}, func() {
		if sendErr = o.send(next, got); sendErr != nil {
			return
		}
		off := 0
		for end := range ready {
			if sendErr = o.write(next, dst[off:end]); sendErr != nil {
				return
			}
			off = end
		}
	})
	if err := o.firstErr(); err != nil {
		return err
	}
	return sendErr
}

// Gather collects every rank's data on root, indexed by rank (root's own
// entry is data itself). Other ranks get nil.
func (g *Group) Gather(ctx context.Context, data []byte, root int) ([][]byte, error) {
	if err := g.checkRoot(root); err != nil {
		return nil, err
	}
	if g.size == 1 {
		return [][]byte{data}, g.single()
	}
	var out [][]byte
	err := g.run(ctx, "gather", header{op: opGather, dtype: dtBytes, root: uint32(root)}, func(o *opCtx) error {
		if g.rank != root {
			return o.send(g.peers[root], uint64(len(data)), data)
		}
		out = make([][]byte, g.size)
		out[root] = data
		parallel(receivers(o, out, nil)...)
		return o.firstErr()
	})
	return out, err
}

// AllGather collects every rank's data on every rank, indexed by rank (this
// rank's entry is data itself). Lengths may differ between ranks.
func (g *Group) AllGather(ctx context.Context, data []byte) ([][]byte, error) {
	if g.size == 1 {
		return [][]byte{data}, g.single()
	}
	out := make([][]byte, g.size)
	err := g.run(ctx, "all_gather", header{op: opAllGather, dtype: dtBytes}, func(o *opCtx) error {
		out[g.rank] = data
		send := func() {
			for k := 1; k < g.size; k++ { // staggered so that ranks do not all write to rank 0 first
				if o.send(g.peers[(g.rank+k)%g.size], uint64(len(data)), data) != nil {
					return
				}
			}
		}
		parallel(receivers(o, out, []func(){send})...)
		return o.firstErr()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// receivers appends to fns, for every peer, a function that receives the
// peer's counted message into out[peer's rank] (failures go to o.fail).
func receivers(o *opCtx, out [][]byte, fns []func()) []func() {
	for _, p := range o.g.peers {
		if p == nil {
			continue
		}
		fns = append(fns, func() {
			cnt, err := o.recvHeader(p, -1)
			if err != nil {
				return
			}
			b := make([]byte, cnt)
			if o.read(p, b) == nil {
				out[p.rank] = b
			}
		})
	}
	return fns
}

// AllReduceFloat32 reduces buf element-wise across all ranks, in place:
// afterwards every rank holds the same (bitwise identical) result. Every rank
// must pass a buffer of the same length.
func (g *Group) AllReduceFloat32(ctx context.Context, buf []float32, op ReduceOp) error {
	return allReduce(ctx, g, buf, op)
}

// AllReduceFloat64 is AllReduceFloat32 for float64.
func (g *Group) AllReduceFloat64(ctx context.Context, buf []float64, op ReduceOp) error {
	return allReduce(ctx, g, buf, op)
}

// ReduceFloat32 reduces buf element-wise across all ranks into root's buf.
// The buffers of the other ranks are left unchanged.
func (g *Group) ReduceFloat32(ctx context.Context, buf []float32, op ReduceOp, root int) error {
	return reduceTo(ctx, g, buf, op, root)
}

// ReduceFloat64 is ReduceFloat32 for float64.
func (g *Group) ReduceFloat64(ctx context.Context, buf []float64, op ReduceOp, root int) error {
	return reduceTo(ctx, g, buf, op, root)
}

func (g *Group) checkRoot(root int) error {
	if root < 0 || root >= g.size {
		return fmt.Errorf("pg: root %d out of range for world size %d", root, g.size)
	}
	return nil
}

func allReduce[T float](ctx context.Context, g *Group, buf []T, op ReduceOp) error {
	if !op.valid() {
		return fmt.Errorf("pg: invalid reduce op %v", op)
	}
	if g.size == 1 {
		return g.single()
	}
	h := header{op: opAllReduce, dtype: dtypeOf[T](), redop: byte(op), count: uint64(len(buf))}
	return g.run(ctx, "all_reduce", h, func(o *opCtx) error {
		if len(buf) < g.size || len(buf)*elemSize[T]() <= directMaxBytes {
			return directReduce(o, buf, op, -1)
		}
		return ringReduce(o, buf, op, false)
	})
}

func reduceTo[T float](ctx context.Context, g *Group, buf []T, op ReduceOp, root int) error {
	if !op.valid() {
		return fmt.Errorf("pg: invalid reduce op %v", op)
	}
	if err := g.checkRoot(root); err != nil {
		return err
	}
	if g.size == 1 {
		return g.single()
	}
	h := header{op: opReduce, dtype: dtypeOf[T](), redop: byte(op), root: uint32(root), count: uint64(len(buf))}
	return g.run(ctx, "reduce", h, func(o *opCtx) error {
		if len(buf) < g.size || len(buf)*elemSize[T]() <= directMaxBytes {
			return directReduce(o, buf, op, root)
		}
		work := buf
		if g.rank != root {
			work = append([]T(nil), buf...)
		}
		if err := ringReduce(o, work, op, true); err != nil {
			return err
		}
		// Rank r now owns the fully reduced chunk r+1; collect them on root.
		n := g.size
		lo, hi := chunkBounds(len(work), n, g.rank+1)
		if g.rank != root {
			return o.write(g.peers[root], asBytes(work[lo:hi]))
		}
		fns := make([]func(), 0, n-1)
		for _, p := range g.peers {
			if p == nil {
				continue
			}
			fns = append(fns, func() {
				lo, hi := chunkBounds(len(work), n, p.rank+1)
				_ = o.read(p, asBytes(work[lo:hi]))
			})
		}
		parallel(fns...)
		return o.firstErr()
	})
}

// scratch returns a reusable buffer of n elements of T.
func scratch[T wireElem](g *Group, n int) []T {
	need := n * elemSize[T]()
	if cap(g.scratch) < need {
		words := make([]uint64, (need+7)/8)
		g.scratch = unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), len(words)*8)
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(g.scratch))), n)
}

// directReduce: every rank sends its whole buffer to every other rank (or
// only to root when root >= 0), and the receivers fold the contributions in
// rank order, so all of them compute bitwise identical results.
func directReduce[T float](o *opCtx, buf []T, op ReduceOp, root int) error {
	g := o.g
	if root >= 0 && g.rank != root {
		return o.send(g.peers[root], uint64(len(buf)), asBytes(buf))
	}
	all, err := exchange(o, buf, root < 0)
	if err != nil {
		return err
	}
	copy(buf, all[:len(buf)])
	for j := 1; j < g.size; j++ {
		reduceInto(buf, all[j*len(buf):(j+1)*len(buf)], op)
	}
	if op == Mean {
		scale(buf, g.size)
	}
	return nil
}

// exchange receives every other rank's buf (each must send it with one
// counted message) and returns all contributions in rank order, rank j's at
// [j*len(buf), (j+1)*len(buf)), this rank's a copy of buf. The result lives
// in the group's scratch memory. With toAll, buf is also sent to every other
// rank, staggered so that ranks do not all write to rank 0 first.
func exchange[E wireElem](o *opCtx, buf []E, toAll bool) ([]E, error) {
	g := o.g
	n, r := g.size, g.rank
	cnt := uint64(len(buf))
	all := scratch[E](g, n*len(buf))
	slot := func(j int) []E { return all[j*len(buf) : (j+1)*len(buf)] }
	copy(slot(r), buf)
	fns := make([]func(), 0, n)
	if toAll {
		fns = append(fns, func() {
			for k := 1; k < n; k++ {
				if o.send(g.peers[(r+k)%n], cnt, asBytes(buf)) != nil {
					return
				}
			}
		})
	}
	for _, p := range g.peers {
		if p == nil {
			continue
		}
		fns = append(fns, func() {
			if _, err := o.recvHeader(p, int64(cnt)); err != nil {
				return
			}
			_ = o.read(p, asBytes(slot(p.rank)))
		})
	}
	parallel(fns...)
	return all, o.firstErr()
}

// chunkBounds returns the element range of ring chunk c (taken mod n) of a
// buffer of length l split into n nearly equal chunks.
func chunkBounds(l, n, c int) (int, int) {
	c = ((c % n) + n) % n
	b := func(c int) int { return int(int64(c) * int64(l) / int64(n)) }
	return b(c), b(c + 1)
}

// ringReduce runs the ring algorithm (see ring) on buf, folding with op;
// Mean divides each chunk once, when it is fully reduced.
func ringReduce[T float](o *opCtx, buf []T, op ReduceOp, rsOnly bool) error {
	return ringReduceShifted(o, buf, op, ringPlan{reduceScatter: true, allGather: !rsOnly})
}

func ringReduceShifted[T float](o *opCtx, buf []T, op ReduceOp, plan ringPlan) error {
	n := o.g.size
	return ring(o, buf, plan, func(dst, in []T, last bool) {
		reduceInto(dst, in, op)
		if last && op == Mean {
			scale(dst, n)
		}
	})
}

// ringPlan is which phases of the ring algorithm run: reduce-scatter, after
// which rank r holds the fully reduced chunk r+1+shift, and all-gather,
// which starts from that. With shift -1, rank r's chunk is chunk r, as
// reduce-scatter and all-gather give rank r in torch.distributed; an
// all-gather alone starts from rank r's own chunk r.
type ringPlan struct {
	reduceScatter, allGather bool
	shift                    int
}

// ring runs the pipelined ring algorithm on buf: n-1 reduce-scatter steps
// (rank r sends chunk r-s to r+1 and folds chunk r-s-1 received from r-1),
// then n-1 all-gather steps, as plan says (chunk numbers moved by
// plan.shift). The chunk a rank sends at step s+1 is the one it received at
// step s, so the sender streams each segment as soon as the receiver has
// finished it. fold folds a received segment in into dst; last is true on
// the last reduce-scatter step, after which dst is fully reduced. fold is
// called once per segment (up to segmentBytes), so its call costs nothing
// next to the element loop inside it.
func ring[E wireElem](o *opCtx, buf []E, plan ringPlan, fold func(dst, in []E, last bool)) error {
	g := o.g
	n, r := g.size, g.rank
	next, prev := g.next(), g.prev()
	first, end := 0, 2*(n-1)
	if !plan.reduceScatter {
		first = n - 1
	}
	if !plan.allGather {
		end = n - 1
	}
	sendChunk := func(s int) int {
		if s < n-1 {
			return r - s + plan.shift
		}
		return r + 1 - (s - (n - 1)) + plan.shift
	}
	recvChunk := func(s int) int {
		if s < n-1 {
			return r - s - 1 + plan.shift
		}
		return r - (s - (n - 1)) + plan.shift
	}
	seg := max(segmentBytes/elemSize[E](), 1)
	ready := make(chan struct{}, (end-first)*(len(buf)/n/seg+2))
	// sent carries one token per step the sender has finished. An
	// all-gather step t overwrites the chunk sent at reduce-scatter step t;
	// the bytes have necessarily left (they came back around the ring), but
	// waiting for the token makes that ordering visible to the race detector
	// at the cost of one channel operation per step. An all-gather alone
	// overwrites nothing it sends.
	sent := make(chan struct{}, end-first)
	sentSeen := 0
	tmp := scratch[E](g, seg)
	parallel(func() { // receiver
		defer close(ready)
		if _, err := o.recvHeader(prev, int64(len(buf))); err != nil {
			return
		}
		for s := first; s < end; s++ {
			if plan.reduceScatter && s >= n-1 {
				for ; sentSeen <= s-(n-1); sentSeen++ {
					if _, ok := <-sent; !ok {
						return
					}
				}
			}
			lo, hi := chunkBounds(len(buf), n, recvChunk(s))
			for off := lo; off < hi; off += seg {
				e := min(off+seg, hi)
				dst := buf[off:e]
				if s < n-1 {
					in := tmp[:len(dst)]
					if o.read(prev, asBytes(in)) != nil {
						return
					}
					fold(dst, in, s == n-2)
				} else if o.read(prev, asBytes(dst)) != nil {
					return
				}
				if s < end-1 {
					ready <- struct{}{}
				}
			}
		}
	}, func() { // sender
		defer close(sent)
		if o.send(next, uint64(len(buf))) != nil {
			return
		}
		for s := first; s < end; s++ {
			lo, hi := chunkBounds(len(buf), n, sendChunk(s))
			for off := lo; off < hi; off += seg {
				if s > first {
					if _, ok := <-ready; !ok {
						return
					}
				}
				if o.write(next, asBytes(buf[off:min(off+seg, hi)])) != nil {
					return
				}
			}
			sent <- struct{}{}
		}
	})
	return o.firstErr()
}
