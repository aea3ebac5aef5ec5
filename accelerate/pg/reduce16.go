package pg

import (
	"context"
	"fmt"

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
	all, err := exchange(o, buf, true)
	if err != nil {
		return err
	}
	n := o.g.size
	for i := range buf {
		acc := c.dec(all[i])
		for j := 1; j < n; j++ {
			v := c.dec(all[j*len(buf)+i])
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

// ringReduce16 is ringReduce on 16-bit values: a chunk's partial sum is
// computed in float32 and rounded to 16 bits at every hop.
func ringReduce16(o *opCtx, buf []uint16, op ReduceOp, c codec16) error {
	var div float32
	if op == Mean {
		div = float32(o.g.size)
	}
	return ring(o, buf, ringPlan{reduceScatter: true, allGather: true}, func(dst, in []uint16, last bool) {
		if last {
			c.fold(dst, in, op, div)
		} else {
			c.fold(dst, in, op, 0)
		}
	})
}
