package zero

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"gonum.org/v1/gonum/mat"

	"github.com/goaccel/goaccel/accelerate/nn"
	"github.com/goaccel/goaccel/accelerate/pg"
)

const secret = "zero-test-secret-0123456789"

// join makes a group of n ranks (goroutines over real TCP on 127.0.0.1).
func join(t *testing.T, n int) []*pg.Group {
	t.Helper()
	quiet := logrus.New()
	quiet.SetLevel(logrus.PanicLevel)
	st, err := pg.NewStore("127.0.0.1:0", secret, pg.WithStoreLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- st.Serve(ctx) }()
	groups := make([]*pg.Group, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			groups[r], errs[r] = pg.Join(context.Background(), pg.Config{
				Rank: r, WorldSize: n, StoreAddr: st.Addr(), Secret: secret, Timeout: 10 * time.Minute, Logger: quiet,
			})
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, g := range groups {
			if g != nil {
				g.Close()
			}
		}
		cancel()
		<-served
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	return groups
}

// data is a fixed global batch of 32 samples of 7 features, 3 classes.
func data() (*mat.Dense, []int) {
	x := mat.NewDense(32, 7, nil)
	y := make([]int, 32)
	for i := range 32 {
		for j := range 7 {
			x.Set(i, j, math.Sin(float64(i*7+j)))
		}
		y[i] = i % 3
	}
	return x, y
}

// shard is rank r's rows of the global batch (of world ranks).
func shard(x *mat.Dense, y []int, r, world int) (*mat.Dense, []int) {
	n := len(y) / world
	idx := make([]int, n)
	for i := range idx {
		idx[i] = r*n + i
	}
	return nn.Batch(x, y, idx)
}

// The parity test of PyTorch's FSDP tests: 20 Adam steps of the same
// batches, sharded on N processes against one process whose gradient is
// the mean of the N shards' (DDP's): the same loss at every step and the
// same final weights.
func TestShardedAdamFollowsDDPAdam(t *testing.T) {
	x, y := data()
	for _, world := range []int{2, 4} {
		t.Run(fmt.Sprintf("world%d", world), func(t *testing.T) {
			const steps = 20
			// The reference: one replica, DDP's averaged gradient, nn.Adam.
			ref, err := nn.NewMLP([]int{7, 9, 3}, nn.ReLU, 1)
			if err != nil {
				t.Fatal(err)
			}
			adam := nn.NewAdam(ref, 0.01)
			adam.WeightDecay = 0.01
			var wantLoss []float64
			for range steps {
				sum := make([][]float64, len(ref.Gradients()))
				for i, g := range ref.Gradients() {
					sum[i] = make([]float64, len(g))
				}
				loss := 0.0
				for r := range world {
					ref.ZeroGrad()
					bx, by := shard(x, y, r, world)
					l, grad := nn.CrossEntropy(ref.Forward(bx), by)
					ref.Backward(grad)
					loss += l / float64(world)
					for i, g := range ref.Gradients() {
						for j := range g {
							sum[i][j] += g[j] / float64(world)
						}
					}
				}
				for i, g := range ref.Gradients() {
					copy(g, sum[i])
				}
				adam.Step()
				wantLoss = append(wantLoss, loss)
			}

			groups := join(t, world)
			losses := make([][]float64, world)
			finals := make([][][]float64, world)
			opts := make([]*Adam, world)
			errs := make([]error, world)
			var wg sync.WaitGroup
			for r := range world {
				wg.Add(1)
				go func() {
					defer wg.Done()
					// Each process seeds its model differently: NewAdam
					// starts them all from process 0's.
					m, err := nn.NewMLP([]int{7, 9, 3}, nn.ReLU, uint64(1+r))
					if err != nil {
						errs[r] = err
						return
					}
					o, err := NewAdam(context.Background(), groups[r], m, 0.01)
					if err != nil {
						errs[r] = err
						return
					}
					o.WeightDecay = 0.01
					opts[r] = o
					bx, by := shard(x, y, r, world)
					for range steps {
						o.ZeroGrad()
						l, grad := nn.CrossEntropy(m.Forward(bx), by)
						m.Backward(grad)
						if errs[r] = o.Step(context.Background()); errs[r] != nil {
							return
						}
						losses[r] = append(losses[r], l)
					}
					finals[r] = m.StateDict()
				}()
			}
			wg.Wait()
			for r, err := range errs {
				if err != nil {
					t.Fatalf("rank %d: %v", r, err)
				}
			}
			for s := range steps {
				got := 0.0
				for r := range world {
					got += losses[r][s] / float64(world)
				}
				if math.Abs(got-wantLoss[s]) > 1e-5*math.Abs(wantLoss[s]) {
					t.Errorf("step %d: loss %v, DDP's %v", s+1, got, wantLoss[s])
				}
			}
			want := ref.StateDict()
			for r := range world {
				for i := range want {
					for j := range want[i] {
						if d := math.Abs(finals[r][i][j] - want[i][j]); d > 1e-4 {
							t.Fatalf("rank %d: parameter %d[%d] = %v, DDP's %v", r, i, j, finals[r][i][j], want[i][j])
						}
					}
				}
			}
			// Memory: each process holds a 1/N share of Adam's state.
			total := ref.NumParameters()
			ddpBytes := int64(16 * total)
			for r, o := range opts {
				if limit := float64(ddpBytes) * (1/float64(world) + 0.1); float64(o.StateBytes()) > limit {
					t.Errorf("rank %d holds %d bytes of Adam's state, DDP %d: over 1/N + 10%%", r, o.StateBytes(), ddpBytes)
				}
				if from, to := o.Share(); to-from > (total+world-1)/world {
					t.Errorf("rank %d owns [%d, %d) of %d", r, from, to, total)
				}
			}
		})
	}
}
