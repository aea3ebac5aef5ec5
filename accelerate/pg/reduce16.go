package pg

import (
	"context"
	"fmt"
	"unsafe"

	"github.com/goaccel/goaccel/accelerate/amp"
)

// codec16 converts a 16-bit floating-point format to and from float32.
type codec16 struct {
	dtype byte
	dec   func(uint16) float32
	enc   func(float32) uint16
}

var (
	codecFloat16  = codec16{dtFloat16, amp.Float16ToFloat32, amp.Float32ToFloat16}
	codecBFloat16 = codec16{dtBFloat16, amp.BFloat16ToFloat32, amp.Float32ToBFloat16}
)

// AllReduceFloat16 reduces buf, IEEE 754 half-precision values given as
// their bit patterns, element-wise across all ranks, in place. The values
// travel as 16 bits (half the bytes of float32), with the same algorithms
// as AllReduceFloat32 (direct exchange for small buffers, pipelined ring for
// large ones). Each partial result is computed in float32 and rounded to
// half (nearest, ties to even) before it is forwarded or stored, as a
// 16-bit NCCL all-reduce does; Mean divides the full sum before the last
// rounding. Every rank ends with bitwise identical results.
func (g *Group) AllReduceFloat16(ctx context.Context, buf []uint16, op ReduceOp) error {
	return allReduce16(ctx, g, buf, op, codecFloat16)
}

// AllReduceBFloat16 is AllReduceFloat16 for bfloat16 bit patterns.
func (g *Group) AllReduceBFloat16(ctx context.Context, buf []uint16, op ReduceOp) error {
	return allReduce16(ctx, g, buf, op, codecBFloat16)
}

func bytes16(s []uint16) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), 2*len(s))
}

// scratch16 returns a reusable buffer of n uint16.
func scratch16(g *Group, n int) []uint16 {
	if cap(g.scratch) < 2*n {
		words := make([]uint64, (2*n+7)/8)
		g.scratch = unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), len(words)*8)
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(g.scratch))), n)
}

// fold folds in into dst (dst = round16(dst ⊕ in)); with div > 0 the
// result is divided by div first (Mean's last step).
func (c codec16) fold(dst, in []uint16, op ReduceOp, div float32) {
	in = in[:len(dst)]
	for i, d := range dst {
		a, b := c.dec(d), c.dec(in[i])
		var v float32
		switch op {
		case Max:
			v = max(a, b) // NaN propagates
		case Min:
			v = min(a, b)
		default:
			v = a + b
		}
		if div > 0 {
			v /= div
		}
		dst[i] = c.enc(v)
	}
}

func allReduce16(ctx context.Context, g *Group, buf []uint16, op ReduceOp, c codec16) error {
	if !op.valid() {
		return fmt.Errorf("pg: invalid reduce op %v", op)
	}
	if g.size == 1 {
		return g.single()
	}
	h := header{op: opAllReduce, dtype: c.dtype, redop: byte(op), count: uint64(len(buf))}
	return g.run(ctx, "all_reduce", h, func(o *opCtx) error {
		if len(buf) < g.size || 2*len(buf) <= directMaxBytes {
			return directReduce16(o, buf, op, c)
		}
		return ringReduce16(o, buf, op, c)
	})
}

// directReduce16: every rank sends its buffer to every other rank; each
// rank adds the contributions in rank order in float32 and rounds once.
func directReduce16(o *opCtx, buf []uint16, op ReduceOp, c codec16) error {
	g := o.g
	n, r := g.size, g.rank
	cnt := uint64(len(buf))
	all := scratch16(g, n*len(buf))
	slot := func(j int) []uint16 { return all[j*len(buf) : (j+1)*len(buf)] }
	copy(slot(r), buf)
	fns := make([]func(), 0, n)
	fns = append(fns, func() {
		for k := 1; k < n; k++ {
			if o.send(g.peers[(r+k)%n], cnt, bytes16(buf)) != nil {
				return
			}
		}
	})
	for _, p := range g.peers {
		if p == nil {
			continue
		}
		fns = append(fns, func() {
			if _, err := o.recvHeader(p, int64(cnt)); err != nil {
				return
			}
			_ = o.read(p, bytes16(slot(p.rank)))
		})
	}
	parallel(fns...)
	if err := o.firstErr(); err != nil {
		return err
	}
	for i := range buf {
		acc := c.dec(slot(0)[i])
		for j := 1; j < n; j++ {
			v := c.dec(slot(j)[i])
			switch op {
			case Max:
				acc = max(acc, v)
			case Min:
				acc = min(acc, v)
			default:
				acc += v
			}
		}
		if op == Mean {
			acc /= float32(n)
		}
		buf[i] = c.enc(acc)
	}
	return nil
}

// ringReduce16 is ringReduce (reduce-scatter, then all-gather, pipelined in
// segments) on 16-bit values: a chunk's partial sum is rounded to 16 bits at
// every hop.
func ringReduce16(o *opCtx, buf []uint16, op ReduceOp, c codec16) error {
	g := o.g
	n, r := g.size, g.rank
	next, prev := g.next(), g.prev()
	steps := 2 * (n - 1)
	sendChunk := func(s int) int {
		if s < n-1 {
			return r - s
		}
		return r + 1 - (s - (n - 1))
	}
	recvChunk := func(s int) int {
		if s < n-1 {
			return r - s - 1
		}
		return r - (s - (n - 1))
	}
	seg := max(segmentBytes/2, 1)
	ready := make(chan struct{}, steps*(len(buf)/n/seg+2))
	sent := make(chan struct{}, steps) // see ringReduce
	sentSeen := 0
	tmp := scratch16(g, seg)
	var div float32
	if op == Mean {
		div = float32(n)
	}
	parallel(func() { // receiver
		defer close(ready)
		if _, err := o.recvHeader(prev, int64(len(buf))); err != nil {
			return
		}
		for s := 0; s < steps; s++ {
			if s >= n-1 {
				for ; sentSeen <= s-(n-1); sentSeen++ {
					if _, ok := <-sent; !ok {
						return
					}
				}
			}
			lo, hi := chunkBounds(len(buf), n, recvChunk(s))
			for off := lo; off < hi; off += seg {
				end := min(off+seg, hi)
				dst := buf[off:end]
				if s < n-1 {
					in := tmp[:len(dst)]
					if o.read(prev, bytes16(in)) != nil {
						return
					}
					d := float32(0)
					if s == n-2 {
						d = div
					}
					c.fold(dst, in, op, d)
				} else if o.read(prev, bytes16(dst)) != nil {
					return
				}
				if s < steps-1 {
					ready <- struct{}{}
				}
			}
		}
	}, func() { // sender
		defer close(sent)
		if o.send(next, uint64(len(buf))) != nil {
			return
		}
		for s := 0; s < steps; s++ {
			lo, hi := chunkBounds(len(buf), n, sendChunk(s))
			for off := lo; off < hi; off += seg {
				if s > 0 {
					if _, ok := <-ready; !ok {
						return
					}
				}
				if o.write(next, bytes16(buf[off:min(off+seg, hi)])) != nil {
					return
				}
			}
			sent <- struct{}{}
		}
	})
	return o.firstErr()
}
