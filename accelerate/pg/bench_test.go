package pg

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkAllReduceFloat32 measures in-process all-reduce bandwidth
// (goroutine ranks over loopback TCP; b.SetBytes = buffer size, so MB/s is
// the algorithm bandwidth). bench/allreduce measures separate processes.
func BenchmarkAllReduceFloat32(b *testing.B) {
	for _, world := range []int{2, 4} {
		groups := joinAll(b, world)
		for _, size := range []int{4 << 10, 256 << 10, 4 << 20, 64 << 20} {
			b.Run(fmt.Sprintf("np%d/%dKiB", world, size>>10), func(b *testing.B) {
				bufs := make([][]float32, world)
				for r := range bufs {
					bufs[r] = make([]float32, size/4)
				}
				b.SetBytes(int64(size))
				b.ResetTimer()
				mustAll(b, onAll(groups, func(r int, g *Group) error {
					for i := 0; i < b.N; i++ {
						if err := g.AllReduceFloat32(context.Background(), bufs[r], Sum); err != nil {
							return err
						}
					}
					return nil
				}))
			})
		}
	}
}

func BenchmarkBarrier(b *testing.B) {
	groups := joinAll(b, 4)
	b.ResetTimer()
	mustAll(b, onAll(groups, func(r int, g *Group) error {
		for i := 0; i < b.N; i++ {
			if err := g.Barrier(context.Background()); err != nil {
				return err
			}
		}
		return nil
	}))
}
