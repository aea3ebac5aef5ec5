package pg

// The collectives of sharded training (FSDP, ZeRO): reduce-scatter, after
// which each rank holds its reduced share of a buffer, and all-gather into
// one buffer, which puts the shares back together. Their semantics are
// torch.distributed's reduce_scatter_tensor and all_gather_into_tensor:
// rank i's share is chunk i, and chunks are in rank order. Large buffers
// take the pipelined ring (each rank sends (n-1)/n of the buffer, as one
// half of an all-reduce); small ones a direct exchange.

import (
	"context"
	"fmt"
	"unsafe"
)

// ReduceScatterFloat32 reduces in element-wise across all ranks and leaves
// rank i's share of the result, its chunk i, in out: in holds Size()
// chunks of len(out) elements. in is left unchanged; out may be in's chunk
// of this rank. Every rank passes buffers of the same lengths.
func (g *Group) ReduceScatterFloat32(ctx context.Context, out, in []float32, op ReduceOp) error {
	return reduceScatter(ctx, g, out, in, op)
}

// ReduceScatterInPlaceFloat32 is ReduceScatterFloat32 on buf's own memory:
// buf (Size() chunks) is the ring's work buffer, so no copy of it is made,
// and its contents are undefined afterwards but for this rank's chunk,
// which holds the share (returned). For a buffer that is scratch after the
// reduction, such as sharded training's flat gradients.
func (g *Group) ReduceScatterInPlaceFloat32(ctx context.Context, buf []float32, op ReduceOp) ([]float32, error) {
	if g.size < 1 || len(buf)%g.size != 0 {
		return nil, fmt.Errorf("pg: reduce_scatter: %d elements do not divide into %d equal chunks", len(buf), g.size)
	}
	m := len(buf) / g.size
	share := buf[g.rank*m : (g.rank+1)*m]
	return share, reduceScatterInto(ctx, g, share, buf, op, true)
}

// ReduceScatterFloat64 is ReduceScatterFloat32 for float64.
func (g *Group) ReduceScatterFloat64(ctx context.Context, out, in []float64, op ReduceOp) error {
	return reduceScatter(ctx, g, out, in, op)
}

// AllGatherFloat32 gathers every rank's in into out, rank i's in as chunk
// i: out holds Size() chunks of len(in) elements, the same on every rank.
// in may be out's chunk of this rank (in place).
func (g *Group) AllGatherFloat32(ctx context.Context, out, in []float32) error {
	return allGatherInto(ctx, g, out, in, dtFloat32)
}

// AllGatherFloat64 is AllGatherFloat32 for float64.
func (g *Group) AllGatherFloat64(ctx context.Context, out, in []float64) error {
	return allGatherInto(ctx, g, out, in, dtFloat64)
}

// ReduceScatterFloat16 is ReduceScatterFloat32 for IEEE half-precision
// bit patterns: they travel as 16 bits, each partial result computed in
// float32 and rounded to half before it is forwarded, as AllReduceFloat16.
func (g *Group) ReduceScatterFloat16(ctx context.Context, out, in []uint16, op ReduceOp) error {
	return reduceScatter16(ctx, g, out, in, op, codecFloat16)
}

// ReduceScatterBFloat16 is ReduceScatterFloat16 for bfloat16.
func (g *Group) ReduceScatterBFloat16(ctx context.Context, out, in []uint16, op ReduceOp) error {
	return reduceScatter16(ctx, g, out, in, op, codecBFloat16)
}

// AllGatherFloat16 is AllGatherFloat32 for half-precision bit patterns
// (and AllGatherBFloat16 for bfloat16's): the bits are only moved.
func (g *Group) AllGatherFloat16(ctx context.Context, out, in []uint16) error {
	return allGatherInto(ctx, g, out, in, dtFloat16)
}

// AllGatherBFloat16 is AllGatherFloat16 for bfloat16 bit patterns.
func (g *Group) AllGatherBFloat16(ctx context.Context, out, in []uint16) error {
	return allGatherInto(ctx, g, out, in, dtBFloat16)
}

func (g *Group) checkShards(what string, whole, share int) error {
	if whole != g.size*share {
		return fmt.Errorf("pg: %s: the whole buffer has %d elements, not world size %d × the share's %d", what, whole, g.size, share)
	}
	return nil
}

func reduceScatter[T float](ctx context.Context, g *Group, out, in []T, op ReduceOp) error {
	return reduceScatterInto(ctx, g, out, in, op, false)
}

// reduceScatterInto is reduceScatter; inPlace lets the ring fold in in
// itself (out is then in's chunk of this rank).
func reduceScatterInto[T float](ctx context.Context, g *Group, out, in []T, op ReduceOp, inPlace bool) error {
	if !op.valid() {
		return fmt.Errorf("pg: invalid reduce op %v", op)
	}
	if err := g.checkShards("reduce_scatter", len(in), len(out)); err != nil {
		return err
	}
	if g.size == 1 {
		copy(out, in)
		return g.single()
	}
	h := header{op: opReduceScatter, dtype: dtypeOf[T](), redop: byte(op), count: uint64(len(out))}
	return g.run(ctx, "reduce_scatter", h, func(o *opCtx) error {
		if len(out) == 0 || len(in)*elemSize[T]() <= directMaxBytes {
			all, err := exchange(o, in, true)
			if err != nil {
				return err
			}
			// Rank j's chunk r, folded in rank order: every rank's share
			// is computed the same way, whatever the rank.
			m, r := len(out), g.rank
			acc := make([]T, m)
			copy(acc, all[r*m:(r+1)*m])
			for j := 1; j < g.size; j++ {
				reduceInto(acc, all[j*len(in)+r*m:j*len(in)+(r+1)*m], op)
			}
			if op == Mean {
				scale(acc, g.size)
			}
			copy(out, acc)
			return nil
		}
		work := in
		if !inPlace {
			work = shardWork[T](g, len(in))
			copy(work, in)
		}
		if err := ringReduceShifted(o, work, op, ringPlan{reduceScatter: true, shift: -1}); err != nil {
			return err
		}
		copy(out, work[g.rank*len(out):(g.rank+1)*len(out)])
		return nil
	})
}

func reduceScatter16(ctx context.Context, g *Group, out, in []uint16, op ReduceOp, c codec16) error {
	if !op.valid() {
		return fmt.Errorf("pg: invalid reduce op %v", op)
	}
	if err := g.checkShards("reduce_scatter", len(in), len(out)); err != nil {
		return err
	}
	if g.size == 1 {
		copy(out, in)
		return g.single()
	}
	h := header{op: opReduceScatter, dtype: c.dtype, redop: byte(op), count: uint64(len(out))}
	return g.run(ctx, "reduce_scatter", h, func(o *opCtx) error {
		var div float32
		if op == Mean {
			div = float32(g.size)
		}
		if len(out) == 0 || 2*len(in) <= directMaxBytes {
			all, err := exchange(o, in, true)
			if err != nil {
				return err
			}
			m, r := len(out), g.rank
			share := make([]uint16, m)
			for i := range share {
				acc := c.dec(all[r*m+i])
				for j := 1; j < g.size; j++ {
					v := c.dec(all[j*len(in)+r*m+i])
					switch op {
					case Max:
						acc = max(acc, v)
					case Min:
						acc = min(acc, v)
					default:
						acc += v
					}
				}
				if div > 0 {
					acc /= div
				}
				share[i] = c.enc(acc)
			}
			copy(out, share)
			return nil
		}
		work := shardWork[uint16](g, len(in))
		copy(work, in)
		err := ring(o, work, ringPlan{reduceScatter: true, shift: -1}, func(dst, in []uint16, last bool) {
			if last {
				c.fold(dst, in, op, div)
			} else {
				c.fold(dst, in, op, 0)
			}
		})
		if err != nil {
			return err
		}
		copy(out, work[g.rank*len(out):(g.rank+1)*len(out)])
		return nil
	})
}

func allGatherInto[E wireElem](ctx context.Context, g *Group, out, in []E, dtype byte) error {
	if err := g.checkShards("all_gather_into_tensor", len(out), len(in)); err != nil {
		return err
	}
	m, r := len(in), g.rank
	copy(out[r*m:(r+1)*m], in) // nothing to do when in is that chunk
	if g.size == 1 {
		return g.single()
	}
	h := header{op: opAllGatherInto, dtype: dtype, count: uint64(m)}
	return g.run(ctx, "all_gather_into_tensor", h, func(o *opCtx) error {
		if m == 0 || len(out)*elemSize[E]() <= directMaxBytes {
			all, err := exchange(o, out[r*m:(r+1)*m], true)
			if err != nil {
				return err
			}
			copy(out, all)
			return nil
		}
		return ring(o, out, ringPlan{allGather: true, shift: -1}, nil)
	})
}

// shardWork returns a reusable buffer of n elements of T for
// reduce-scatter's copy of its input (the ring folds in place, and the
// input is the caller's).
func shardWork[T wireElem](g *Group, n int) []T {
	need := n * elemSize[T]()
	if cap(g.shardWork) < need {
		words := make([]uint64, (need+7)/8)
		g.shardWork = unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), len(words)*8)
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(g.shardWork))), n)
}
