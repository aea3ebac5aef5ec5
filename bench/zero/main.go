// Command zero measures a training step of a float64 MLP (package nn) with
// ZeRO stage 2 (package zero: Adam's state and the reduced gradients
// sharded, FSDP's SHARD_GRAD_OP) beside DDP (package ddp's bucketed
// all-reduce and nn.Adam), on 2 and 4 ranks, in the same run, interleaved:
// the median step time of each, their ratio, and the bytes of Adam's state
// each rank holds. Ranks are goroutines of this process over real TCP on
// loopback (they share its cores, as processes of one machine would).
//
//	go run ./bench/zero [-np 2,4] [-steps 20] [-sizes 784,1024,512,10]
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"gonum.org/v1/gonum/mat"

	"github.com/goaccel/goaccel/accelerate/ddp"
	"github.com/goaccel/goaccel/accelerate/kwargs"
	"github.com/goaccel/goaccel/accelerate/nn"
	"github.com/goaccel/goaccel/accelerate/pg"
	"github.com/goaccel/goaccel/accelerate/zero"
)

const secret = "bench-zero-secret-0123456789"

// reducer is ddp.Reducer over a group.
type reducer struct{ g *pg.Group }

func (r reducer) Rank() int      { return r.g.Rank() }
func (r reducer) WorldSize() int { return r.g.Size() }
func (r reducer) AllReduceFloat64(b []float64, op string) error {
	o, err := pg.ParseReduceOp(op)
	if err != nil {
		return err
	}
	return r.g.AllReduceFloat64(context.Background(), b, o)
}
func (r reducer) AllReduceFloat32(b []float32, op string) error {
	o, err := pg.ParseReduceOp(op)
	if err != nil {
		return err
	}
	return r.g.AllReduceFloat32(context.Background(), b, o)
}
func (r reducer) BroadcastFloat64(b []float64, root int) error {
	return r.g.BroadcastFloat64(context.Background(), b, root)
}
func (r reducer) BroadcastFloat32(b []float32, root int) error {
	return r.g.BroadcastFloat32(context.Background(), b, root)
}
func (r reducer) AllGatherBytes(d []byte) ([][]byte, error) {
	return r.g.AllGather(context.Background(), d)
}

func main() {
	nps := flag.String("np", "2,4", "comma-separated world sizes")
	steps := flag.Int("steps", 20, "steps per measurement")
	sizesFlag := flag.String("sizes", "784,1024,512,10", "the MLP's layer sizes")
	flag.Parse()
	var sizes []int
	for _, s := range strings.Split(*sizesFlag, ",") {
		n, err := strconv.Atoi(s)
		if err != nil {
			fail(err)
		}
		sizes = append(sizes, n)
	}
	probe, err := nn.NewMLP(sizes, nn.ReLU, 1)
	if err != nil {
		fail(err)
	}
	fmt.Printf("MLP %v: %d parameters; batch 64 per rank; %d steps per run, runs interleaved\n\n", sizes, probe.NumParameters(), *steps)
	fmt.Printf("%-4s %14s %14s %8s %16s %16s\n", "np", "DDP step", "ZeRO-2 step", "ratio", "DDP Adam state", "ZeRO-2 state")
	for _, s := range strings.Split(*nps, ",") {
		world, err := strconv.Atoi(s)
		if err != nil {
			fail(err)
		}
		var tDDP, tZero []time.Duration
		var stateZero int64
		for range 3 {
			d, _ := run(world, sizes, *steps, false)
			z, st := run(world, sizes, *steps, true)
			tDDP, tZero, stateZero = append(tDDP, d), append(tZero, z), st
		}
		md, mz := median(tDDP), median(tZero)
		fmt.Printf("%-4d %14v %14v %7.2fx %13.1f MB %13.1f MB\n", world, md, mz, float64(mz)/float64(md),
			float64(16*probe.NumParameters())/1e6, float64(stateZero)/1e6)
	}
}

// run trains world ranks for steps steps and returns the mean step time of
// rank 0 and the bytes of Adam's state rank 0 holds.
func run(world int, sizes []int, steps int, sharded bool) (time.Duration, int64) {
	quiet := logrus.New()
	quiet.SetLevel(logrus.PanicLevel)
	st, err := pg.NewStore("127.0.0.1:0", secret, pg.WithStoreLogger(quiet))
	if err != nil {
		fail(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go st.Serve(ctx)
	var wg sync.WaitGroup
	var step time.Duration
	var state int64
	errs := make([]error, world)
	for r := range world {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = func() error {
				g, err := pg.Join(ctx, pg.Config{Rank: r, WorldSize: world, StoreAddr: st.Addr(), Secret: secret, Logger: quiet})
				if err != nil {
					return err
				}
				defer g.Close()
				m, err := nn.NewMLP(sizes, nn.ReLU, uint64(r+1))
				if err != nil {
					return err
				}
				x := mat.NewDense(64, sizes[0], nil)
				y := make([]int, 64)
				for i := range 64 {
					for j := range sizes[0] {
						x.Set(i, j, math.Sin(float64(r*131+i*sizes[0]+j)))
					}
					y[i] = i % sizes[len(sizes)-1]
				}
				var stepFn func() error
				if sharded {
					o, err := zero.NewAdam(ctx, g, m, 1e-3)
					if err != nil {
						return err
					}
					state = o.StateBytes()
					stepFn = func() error {
						o.ZeroGrad()
						_, grad := nn.CrossEntropy(m.Forward(x), y)
						m.Backward(grad)
						return o.Step(ctx)
					}
				} else {
					d, err := ddp.Wrap(m, reducer{g}, kwargs.DistributedDataParallelKwargs{})
					if err != nil {
						return err
					}
					o := nn.NewAdam(m, 1e-3)
					stepFn = func() error {
						o.ZeroGrad()
						_, grad := nn.CrossEntropy(m.Forward(x), y)
						m.Backward(grad)
						if err := d.SyncGradients(); err != nil {
							return err
						}
						o.Step()
						return nil
					}
				}
				if err := stepFn(); err != nil { // warm-up
					return err
				}
				start := time.Now()
				for range steps {
					if err := stepFn(); err != nil {
						return err
					}
				}
				if r == 0 {
					step = time.Since(start) / time.Duration(steps)
				}
				return nil
			}()
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			fail(fmt.Errorf("rank %d: %w", r, err))
		}
	}
	return step, state
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "zero:", err)
	os.Exit(1)
}
