package pg

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/goaccel/goaccel/accelerate/amp"
)

func TestAllReduce16(t *testing.T) {
	old := segmentBytes
	defer func() { segmentBytes = old }()
	for _, world := range []int{2, 3, 4} {
		groups := joinAll(t, world)
		for _, n := range []int{0, 1, 7, 20000, 100003} {
			for _, op := range []ReduceOp{Sum, Mean, Max, Min} {
				for _, c := range []struct {
					name string
					cd   codec16
					run  func(*Group, []uint16) error
				}{
					{"fp16", codecFloat16, func(g *Group, b []uint16) error { return g.AllReduceFloat16(context.Background(), b, op) }},
					{"bf16", codecBFloat16, func(g *Group, b []uint16) error { return g.AllReduceBFloat16(context.Background(), b, op) }},
				} {
					t.Run(fmt.Sprintf("world%d/n%d/%v/%s", world, n, op, c.name), func(t *testing.T) {
						if n == 100003 {
							segmentBytes = 4096 // many pipelined segments per chunk
						} else {
							segmentBytes = old
						}
						// Small integers: every partial sum is exact in both formats,
						// so the result is the exact reduction, rounded once.
						val := func(r, i int) float32 { return float32((r+1)*(i%7) - 3*(i%3)) }
						want := make([]uint16, n)
						for i := range want {
							acc := val(0, i)
							for r := 1; r < world; r++ {
								switch op {
								case Max:
									acc = max(acc, val(r, i))
								case Min:
									acc = min(acc, val(r, i))
								default:
									acc += val(r, i)
								}
							}
							if op == Mean {
								acc /= float32(world)
							}
							want[i] = c.cd.enc(acc)
						}
						got := make([][]uint16, world)
						mustAll(t, onAll(groups, func(r int, g *Group) error {
							got[r] = make([]uint16, n)
							for i := range got[r] {
								got[r][i] = c.cd.enc(val(r, i))
							}
							return c.run(g, got[r])
						}))
						for r := range got {
							for i := range want {
								if got[r][i] != want[i] {
									t.Fatalf("rank %d: [%d] = %v, want %v", r, i, c.cd.dec(got[r][i]), c.cd.dec(want[i]))
								}
							}
						}
					})
				}
			}
		}
	}
}

// Inexact values: every rank ends with the same bits, close to the float64
// sum.
func TestAllReduce16BitwiseIdentical(t *testing.T) {
	const world, n = 3, 50000
	groups := joinAll(t, world)
	val := func(r, i int) float32 { return float32(math.Sin(float64(i*(r+2)))) / 3 }
	got := make([][]uint16, world)
	mustAll(t, onAll(groups, func(r int, g *Group) error {
		got[r] = make([]uint16, n)
		for i := range got[r] {
			got[r][i] = amp.Float32ToFloat16(val(r, i))
		}
		return g.AllReduceFloat16(context.Background(), got[r], Sum)
	}))
	for i := 0; i < n; i++ {
		exact := 0.0
		for r := 0; r < world; r++ {
			exact += float64(amp.Float16ToFloat32(amp.Float32ToFloat16(val(r, i))))
		}
		v := float64(amp.Float16ToFloat32(got[0][i]))
		if math.Abs(v-exact) > 2e-3 {
			t.Fatalf("[%d] = %v, want about %v", i, v, exact)
		}
		for r := 1; r < world; r++ {
			if got[r][i] != got[0][i] {
				t.Fatalf("rank %d differs at %d", r, i)
			}
		}
	}
}

func TestAllReduce16Mismatch(t *testing.T) {
	groups := joinAll(t, 2)
	errs := onAll(groups, func(r int, g *Group) error {
		b := make([]uint16, 10)
		if r == 0 {
			return g.AllReduceFloat16(context.Background(), b, Sum)
		}
		return g.AllReduceBFloat16(context.Background(), b, Sum)
	})
	for r, err := range errs {
		if !errors.Is(err, ErrMismatch) {
			t.Fatalf("rank %d: %v, want a mismatch", r, err)
		}
	}
	g1 := joinAll(t, 1)[0]
	if err := g1.AllReduceFloat16(context.Background(), []uint16{1}, ReduceOp(9)); err == nil {
		t.Fatal("invalid op accepted")
	}
}
