package pg

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// Reduce-scatter gives rank i chunk i of the reduction, all-gather puts
// rank i's share at chunk i of every rank's buffer (torch.distributed's
// reduce_scatter_tensor and all_gather_into_tensor), on the direct path
// and on the ring, with shares of any size.
func TestReduceScatterAndAllGather(t *testing.T) {
	old := segmentBytes
	defer func() { segmentBytes = old }()
	ctx := context.Background()
	for _, world := range []int{2, 3, 4} {
		groups := joinAll(t, world)
		for _, share := range []int{0, 1, 5, 3000, 25001} {
			for _, op := range []ReduceOp{Sum, Mean, Max} {
				t.Run(fmt.Sprintf("world%d/share%d/%v", world, share, op), func(t *testing.T) {
					segmentBytes = old
					if share == 25001 {
						segmentBytes = 4096 // many pipelined segments per chunk
					}
					// Small integers: every partial result is exact, so any
					// order of folding gives the same answer.
					val := func(r, i int) float64 { return float64((r+1)*(i%11) - 2*(i%5)) }
					want := make([]float64, world*share)
					for i := range want {
						acc := val(0, i)
						for r := 1; r < world; r++ {
							if op == Max {
								acc = max(acc, val(r, i))
							} else {
								acc += val(r, i)
							}
						}
						if op == Mean {
							acc /= float64(world)
						}
						want[i] = acc
					}
					out32 := make([][]float32, world)
					out64 := make([][]float64, world)
					mustAll(t, onAll(groups, func(r int, g *Group) error {
						in32 := make([]float32, world*share)
						in64 := make([]float64, world*share)
						for i := range in32 {
							in32[i], in64[i] = float32(val(r, i)), val(r, i)
						}
						out32[r], out64[r] = make([]float32, share), make([]float64, share)
						if err := g.ReduceScatterFloat32(ctx, out32[r], in32, op); err != nil {
							return err
						}
						if err := g.ReduceScatterFloat64(ctx, out64[r], in64, op); err != nil {
							return err
						}
						for i := range in32 { // left unchanged
							if in32[i] != float32(val(r, i)) {
								return fmt.Errorf("in[%d] changed", i)
							}
						}
						// In place: the same share, in the buffer's own chunk.
						got, err := g.ReduceScatterInPlaceFloat32(ctx, in32, op)
						if err != nil {
							return err
						}
						if len(got) != share || (share > 0 && &got[0] != &in32[r*share]) {
							return fmt.Errorf("in place: a share of %d elements, not this rank's chunk of the buffer", len(got))
						}
						for i := range got {
							if got[i] != out32[r][i] {
								return fmt.Errorf("in place: share[%d] = %v, the copying one gives %v", i, got[i], out32[r][i])
							}
						}
						return nil
					}))
					for r := 0; r < world; r++ {
						for i := 0; i < share; i++ {
							if w := want[r*share+i]; out64[r][i] != w || out32[r][i] != float32(w) {
								t.Fatalf("rank %d share[%d] = %v / %v, want %v", r, i, out32[r][i], out64[r][i], w)
							}
						}
					}
					// All-gather the shares back, in place: every rank ends
					// with the whole reduction.
					whole := make([][]float32, world)
					mustAll(t, onAll(groups, func(r int, g *Group) error {
						whole[r] = make([]float32, world*share)
						copy(whole[r][r*share:], out32[r])
						return g.AllGatherFloat32(ctx, whole[r], whole[r][r*share:(r+1)*share])
					}))
					for r := 0; r < world; r++ {
						for i, w := range want {
							if whole[r][i] != float32(w) {
								t.Fatalf("rank %d: whole[%d] = %v, want %v", r, i, whole[r][i], w)
							}
						}
					}
				})
			}
		}
	}
}

func TestReduceScatterAndAllGather16(t *testing.T) {
	ctx := context.Background()
	for _, world := range []int{2, 3} {
		groups := joinAll(t, world)
		for _, share := range []int{3, 20000} {
			for _, c := range []codec16{codecFloat16, codecBFloat16} {
				val := func(r, i int) float32 { return float32((r + 1) * (i % 7)) }
				shares := make([][]uint16, world)
				mustAll(t, onAll(groups, func(r int, g *Group) error {
					in := make([]uint16, world*share)
					for i := range in {
						in[i] = c.enc(val(r, i))
					}
					shares[r] = make([]uint16, share)
					if c.dtype == dtFloat16 {
						return g.ReduceScatterFloat16(ctx, shares[r], in, Sum)
					}
					return g.ReduceScatterBFloat16(ctx, shares[r], in, Sum)
				}))
				whole := make([][]uint16, world)
				mustAll(t, onAll(groups, func(r int, g *Group) error {
					whole[r] = make([]uint16, world*share)
					if c.dtype == dtFloat16 {
						return g.AllGatherFloat16(ctx, whole[r], shares[r])
					}
					return g.AllGatherBFloat16(ctx, whole[r], shares[r])
				}))
				for r := 0; r < world; r++ {
					for i := range whole[r] {
						var w float32
						for q := 0; q < world; q++ {
							w += val(q, i)
						}
						if got := c.dec(whole[r][i]); got != w {
							t.Fatalf("world %d share %d dtype %d: rank %d [%d] = %v, want %v", world, share, c.dtype, r, i, got, w)
						}
					}
				}
			}
		}
	}
}

func TestShardLengthsAreChecked(t *testing.T) {
	groups := joinAll(t, 2)
	errs := onAll(groups, func(r int, g *Group) error {
		return g.ReduceScatterFloat32(context.Background(), make([]float32, 3), make([]float32, 7), Sum)
	})
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "not world size 2 × the share's 3") {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	// Ranks that disagree on the share's length are named.
	errs = onAll(groups, func(r int, g *Group) error {
		n := 4 + r
		return g.AllGatherFloat32(context.Background(), make([]float32, 2*n), make([]float32, n))
	})
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "all_gather_into_tensor") {
			t.Errorf("rank %d: %v", r, err)
		} else {
			t.Logf("rank %d: %v", r, err)
		}
	}
}
