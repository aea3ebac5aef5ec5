package ddp

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/goaccel/goaccel/accelerate/amp"
	"github.com/goaccel/goaccel/accelerate/kwargs"
)

// world is an in-memory process group: N goroutine "ranks" meet at each
// collective; the last to arrive combines the contributions (in rank order).
type world struct {
	n       int
	mu      sync.Mutex
	cond    *sync.Cond
	gen     int
	arrived int
	slots   []any
	results map[int]any
	names   []string
	bytes   []atomic.Int64 // payload bytes each rank contributed
	calls   atomic.Int64
}

func newWorld(n int) *world {
	w := &world{n: n, slots: make([]any, n), names: make([]string, n), results: map[int]any{}, bytes: make([]atomic.Int64, n)}
	w.cond = sync.NewCond(&w.mu)
	return w
}

func (w *world) exchange(rank int, name string, data any, combine func([]any) any) (any, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	g := w.gen
	w.slots[rank] = data
	w.names[rank] = name
	w.arrived++
	if w.arrived == w.n {
		for r, nm := range w.names {
			if nm != name {
				w.results[g] = fmt.Errorf("rank %d called %s while rank %d called %s", r, nm, rank, name)
			}
		}
		if _, bad := w.results[g]; !bad {
			w.results[g] = combine(w.slots)
		}
		w.slots = make([]any, w.n)
		w.arrived = 0
		w.gen++
		w.cond.Broadcast()
	} else {
		for w.gen == g {
			w.cond.Wait()
		}
	}
	res := w.results[g]
	if err, ok := res.(error); ok {
		return nil, err
	}
	return res, nil
}

type fakeReducer struct {
	w    *world
	rank int
}

func (f *fakeReducer) Rank() int      { return f.rank }
func (f *fakeReducer) WorldSize() int { return f.w.n }

func allReduce[T float](f *fakeReducer, name string, buf []T, op string) error {
	if op != OpSum {
		return fmt.Errorf("op %q", op)
	}
	f.w.calls.Add(1)
	f.w.bytes[f.rank].Add(int64(len(buf) * sizeOf[T]()))
	res, err := f.w.exchange(f.rank, name, append([]T(nil), buf...), func(s []any) any {
		out := make([]T, len(buf))
		for _, c := range s { // rank order
			for i, v := range c.([]T) {
				out[i] += v
			}
		}
		return out
	})
	if err != nil {
		return err
	}
	copy(buf, res.([]T))
	return nil
}

func broadcast[T float](f *fakeReducer, name string, buf []T, root int) error {
	res, err := f.w.exchange(f.rank, name, append([]T(nil), buf...), func(s []any) any { return s[root] })
	if err != nil {
		return err
	}
	copy(buf, res.([]T))
	return nil
}

func (f *fakeReducer) AllReduceFloat64(buf []float64, op string) error {
	return allReduce(f, "all_reduce_f64", buf, op)
}
func (f *fakeReducer) AllReduceFloat32(buf []float32, op string) error {
	return allReduce(f, "all_reduce_f32", buf, op)
}
func (f *fakeReducer) BroadcastFloat64(buf []float64, root int) error {
	return broadcast(f, "broadcast_f64", buf, root)
}
func (f *fakeReducer) BroadcastFloat32(buf []float32, root int) error {
	return broadcast(f, "broadcast_f32", buf, root)
}
func (f *fakeReducer) AllGatherBytes(data []byte) ([][]byte, error) {
	f.w.calls.Add(1)
	f.w.bytes[f.rank].Add(int64(len(data)))
	res, err := f.w.exchange(f.rank, "all_gather", append([]byte(nil), data...), func(s []any) any {
		out := make([][]byte, len(s))
		for i, c := range s {
			out[i] = c.([]byte)
		}
		return out
	})
	if err != nil {
		return nil, err
	}
	return res.([][]byte), nil
}

// onRanks runs fn on n goroutine ranks sharing one world.
func onRanks(t *testing.T, n int, fn func(r *fakeReducer) error) *world {
	t.Helper()
	w := newWorld(n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for r := 0; r < n; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = fn(&fakeReducer{w: w, rank: r})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return w
}

type model64 struct {
	params, grads, bufs [][]float64
	shapes              [][]int
}

func (m *model64) Parameters() [][]float64 { return m.params }
func (m *model64) Gradients() [][]float64  { return m.grads }

type shaped64 struct{ *model64 }

func (m shaped64) Shapes() [][]int { return m.shapes }

type buffered64 struct{ *model64 }

func (m buffered64) Buffers() [][]float64 { return m.bufs }

type model32 struct{ params, grads [][]float32 }

func (m *model32) Parameters32() [][]float32 { return m.params }
func (m *model32) Gradients32() [][]float32  { return m.grads }

func fill64(rng *rand.Rand, sizes []int) [][]float64 {
	out := make([][]float64, len(sizes))
	for i, n := range sizes {
		out[i] = make([]float64, n)
		for j := range out[i] {
			out[i][j] = rng.NormFloat64()
		}
	}
	return out
}

func fill32(rng *rand.Rand, sizes []int) [][]float32 {
	out := make([][]float32, len(sizes))
	for i, n := range sizes {
		out[i] = make([]float32, n)
		for j := range out[i] {
			out[i][j] = float32(rng.Float64()*2 - 1)
		}
	}
	return out
}

func newModel64(rank int, sizes []int) *model64 {
	rng := rand.New(rand.NewPCG(uint64(rank)+1, 7))
	return &model64{params: fill64(rng, sizes), grads: fill64(rng, sizes)}
}

func TestWrapBroadcastsAndAveragesExactly(t *testing.T) {
	const n = 3
	sizes := []int{30000, 30000, 30000, 200000, 10000}
	models := make([]*model64, n)
	for r := range models {
		models[r] = newModel64(r, sizes)
	}
	// Reference: rank 0's parameters; the gradient average summed in rank order.
	wantParams := fill64(rand.New(rand.NewPCG(1, 7)), sizes)
	avg := make([][]float64, len(sizes))
	for i, sz := range sizes {
		avg[i] = make([]float64, sz)
		for j := range avg[i] {
			var s float64
			for r := 0; r < n; r++ {
				s += models[r].grads[i][j]
			}
			avg[i][j] = s / n
		}
	}
	kw := kwargs.DistributedDataParallelKwargs{BucketCapMB: 1} // 131072 float64 per bucket
	var buckets []Bucket
	var stats Stats
	w := onRanks(t, n, func(r *fakeReducer) error {
		d, err := Wrap(models[r.rank], r, kw)
		if err != nil {
			return err
		}
		if r.rank == 0 {
			buckets = d.Buckets()
		}
		for i := range sizes {
			for j, v := range models[r.rank].params[i] {
				if v != wantParams[i][j] {
					return fmt.Errorf("rank %d: parameter %d[%d] = %v, want rank 0's %v", r.rank, i, j, v, wantParams[i][j])
				}
			}
		}
		if err := d.SyncGradients(); err != nil {
			return err
		}
		if r.rank == 0 {
			stats = d.Stats()
		}
		return nil
	})
	for r := 0; r < n; r++ {
		for i := range sizes {
			for j, v := range models[r].grads[i] {
				if v != avg[i][j] {
					t.Fatalf("rank %d: grad %d[%d] = %v, want exactly %v", r, i, j, v, avg[i][j])
				}
			}
		}
	}
	// Reverse order, closed before exceeding 1 MiB: {4}, {3} (alone: over the cap), {2,1,0}.
	want := []Bucket{{Params: []int{4}, Len: 10000}, {Params: []int{3}, Len: 200000}, {Params: []int{2, 1, 0}, Len: 90000}}
	if fmt.Sprint(buckets) != fmt.Sprint(want) {
		t.Errorf("buckets %v, want %v", buckets, want)
	}
	if got := w.calls.Load(); got != 3*n {
		t.Errorf("%d all-reduce calls, want one per bucket per rank (%d)", got, 3*n)
	}
	if stats.Collectives != 3 || stats.Syncs != 1 || stats.BytesSent != 8*300000 {
		t.Errorf("stats %+v", stats)
	}
}

func TestBucketCountForCap(t *testing.T) {
	sizes := make([]int, 40)
	for i := range sizes {
		sizes[i] = 1 << 16 // 256 KiB as float32
	}
	for _, c := range []struct {
		capMB float64
		want  int
	}{{25, 1}, {1, 10}, {0.5, 20}, {0.1, 40}, {4, 3}} {
		m := &model32{params: make([][]float32, len(sizes)), grads: make([][]float32, len(sizes))}
		for i, s := range sizes {
			m.params[i], m.grads[i] = make([]float32, s), make([]float32, s)
		}
		onRanks(t, 1, func(r *fakeReducer) error {
			d, err := Wrap32(m, r, kwargs.DistributedDataParallelKwargs{BucketCapMB: c.capMB})
			if err != nil {
				return err
			}
			if got := len(d.Buckets()); got != c.want {
				return fmt.Errorf("bucket_cap_mb=%v: %d buckets, want %d", c.capMB, got, c.want)
			}
			return nil
		})
	}
}

func TestBuffersBroadcast(t *testing.T) {
	const n = 2
	ms := make([]*model64, n)
	for r := range ms {
		ms[r] = newModel64(r, []int{4})
		ms[r].bufs = [][]float64{{float64(r + 10)}}
	}
	onRanks(t, n, func(r *fakeReducer) error {
		d, err := Wrap(buffered64{ms[r.rank]}, r, kwargs.DistributedDataParallelKwargs{})
		if err != nil {
			return err
		}
		if ms[r.rank].bufs[0][0] != 10 {
			return fmt.Errorf("rank %d buffer %v after Wrap", r.rank, ms[r.rank].bufs[0][0])
		}
		if r.rank == 1 {
			ms[1].bufs[0][0] = 99
		}
		if err := d.SyncBuffers(); err != nil {
			return err
		}
		if ms[r.rank].bufs[0][0] != 10 {
			return fmt.Errorf("rank %d buffer %v after SyncBuffers", r.rank, ms[r.rank].bufs[0][0])
		}
		return nil
	})
	// broadcast_buffers=False: SyncBuffers leaves the buffers alone.
	onRanks(t, n, func(r *fakeReducer) error {
		d, err := Wrap(buffered64{ms[r.rank]}, r, kwargs.DistributedDataParallelKwargs{BroadcastBuffers: kwargs.Bool(false)})
		if err != nil {
			return err
		}
		ms[r.rank].bufs[0][0] = float64(r.rank)
		if err := d.SyncBuffers(); err != nil {
			return err
		}
		if ms[r.rank].bufs[0][0] != float64(r.rank) {
			return fmt.Errorf("rank %d buffer was broadcast", r.rank)
		}
		return nil
	})
}

// fp16/bf16 hooks: 16-bit values on the wire (half the bytes of float32),
// error within the rounding bound, identical results on all ranks.
func TestCompressionHooks(t *testing.T) {
	const n = 4
	sizes := []int{5000, 3000, 777}
	for _, c := range []struct {
		hook kwargs.CommHookType
		eps  float64 // unit roundoff of the format
	}{{kwargs.CommHookFP16, math.Ldexp(1, -11)}, {kwargs.CommHookBF16, math.Ldexp(1, -8)}} {
		t.Run(string(c.hook), func(t *testing.T) {
			mk := func() []*model32 {
				ms := make([]*model32, n)
				for r := range ms {
					rng := rand.New(rand.NewPCG(uint64(r)+5, 9))
					ms[r] = &model32{params: fill32(rng, sizes), grads: fill32(rng, sizes)}
				}
				return ms
			}
			plain, comp := mk(), mk()
			orig := mk()
			run := func(ms []*model32, kw kwargs.DistributedDataParallelKwargs) (*world, Stats) {
				var st Stats
				w := onRanks(t, n, func(r *fakeReducer) error {
					d, err := Wrap32(ms[r.rank], r, kw)
					if err != nil {
						return err
					}
					r.w.bytes[r.rank].Store(0)
					if err := d.SyncGradients(); err != nil {
						return err
					}
					if r.rank == 0 {
						st = d.Stats()
					}
					return nil
				})
				return w, st
			}
			wPlain, _ := run(plain, kwargs.DistributedDataParallelKwargs{})
			wComp, st := run(comp, kwargs.DistributedDataParallelKwargs{CommHook: c.hook})

			for r := 0; r < n; r++ {
				if b0, b1 := wPlain.bytes[r].Load(), wComp.bytes[r].Load(); b1*2 != b0 || b0 == 0 {
					t.Fatalf("rank %d: %d bytes compressed vs %d plain: not halved", r, b1, b0)
				}
			}
			if st.BytesSent != int64(2*(5000+3000+777)) {
				t.Errorf("stats bytes %d", st.BytesSent)
			}
			var maxErr float64
			for i, sz := range sizes {
				for j := 0; j < sz; j++ {
					var exact, absSum float64
					for r := 0; r < n; r++ {
						g := float64(orig[r].grads[i][j])
						exact += g / n
						absSum += math.Abs(g) / n
					}
					got := float64(comp[0].grads[i][j])
					for r := 1; r < n; r++ {
						if comp[r].grads[i][j] != comp[0].grads[i][j] {
							t.Fatalf("ranks disagree at %d[%d]", i, j)
						}
					}
					e := math.Abs(got - exact)
					// 16-bit rounding of each term, float32 summation, subnormal floor.
					bound := absSum*(c.eps+4*math.Ldexp(1, -24)) + n*math.Ldexp(1, -25)
					if e > bound {
						t.Fatalf("%s: grad %d[%d] = %v, exact %v: error %g > bound %g", c.hook, i, j, got, exact, e, bound)
					}
					maxErr = max(maxErr, e)
					// The result is exactly the float32 sum of the 16-bit-rounded shares.
					var want float32
					for r := 0; r < n; r++ {
						v := orig[r].grads[i][j] * (1 / float32(n))
						if c.hook == kwargs.CommHookFP16 {
							want += amp.RoundFP16(v)
						} else {
							want += amp.RoundBF16(v)
						}
					}
					if comp[0].grads[i][j] != want {
						t.Fatalf("grad %d[%d] = %v, want %v", i, j, comp[0].grads[i][j], want)
					}
				}
			}
			if maxErr == 0 {
				t.Fatal("no compression error at all: values were not compressed")
			}
		})
	}
}

// PowerSGD on a gradient whose average is rank 1 recovers it (up to
// round-off); vanilla averaging runs before start_powerSGD_iter; with error
// feedback the applied updates sum to the true gradient sum minus the
// residual errors: W·Σ_t out_t = T·Σ_r g_r − Σ_r e_r.
func TestPowerSGD(t *testing.T) {
	const n = 3
	const rows, cols = 8, 6
	u := []float64{1, -2, 0.5, 3, 1, 0, -1, 2}
	v := []float64{0.5, 1, -1, 2, 0, 1.5}
	kw := kwargs.DistributedDataParallelKwargs{CommHook: kwargs.CommHookPowerSGD,
		CommStateOption: map[string]any{"start_powerSGD_iter": 2, "matrix_approximation_rank": 1}}
	ms := make([]*model64, n)
	var stats []Stats
	onRanks(t, n, func(r *fakeReducer) error {
		m := &model64{params: [][]float64{make([]float64, rows*cols), make([]float64, cols)},
			grads: [][]float64{make([]float64, rows*cols), make([]float64, cols)}, shapes: [][]int{{rows, cols}, {cols}}}
		ms[r.rank] = m
		d, err := Wrap(shaped64{m}, r, kw)
		if err != nil {
			return err
		}
		for it := 0; it < 4; it++ {
			c := float64(r.rank + 1)
			for i := 0; i < rows; i++ {
				for j := 0; j < cols; j++ {
					m.grads[0][i*cols+j] = c * u[i] * v[j]
				}
			}
			for j := range m.grads[1] {
				m.grads[1][j] = c * float64(j)
			}
			if err := d.SyncGradients(); err != nil {
				return err
			}
			// average of c over ranks = 2
			for i := 0; i < rows; i++ {
				for j := 0; j < cols; j++ {
					if g, want := m.grads[0][i*cols+j], 2*u[i]*v[j]; math.Abs(g-want) > 1e-9 {
						return fmt.Errorf("iter %d rank %d: M[%d,%d] = %v, want %v", it, r.rank, i, j, g, want)
					}
				}
			}
			for j, g := range m.grads[1] {
				if math.Abs(g-2*float64(j)) > 1e-12 {
					return fmt.Errorf("iter %d: bias[%d] = %v", it, j, g)
				}
			}
			if r.rank == 0 {
				stats = append(stats, d.Stats())
			}
		}
		return nil
	})
	if stats[0].Compressed != 0 || stats[1].Compressed != 0 || stats[2].Compressed != 1 || stats[3].Compressed != 1 {
		t.Errorf("compressed per iteration: %d %d %d %d, want 0 0 1 1", stats[0].Compressed, stats[1].Compressed, stats[2].Compressed, stats[3].Compressed)
	}
	// Iterations 0-1: one float64 all-reduce; 2-3: P, Q and the bias batch.
	if c := stats[1].Collectives - stats[0].Collectives; c != 1 {
		t.Errorf("vanilla iteration used %d collectives", c)
	}
	if c := stats[3].Collectives - stats[2].Collectives; c != 3 {
		t.Errorf("PowerSGD iteration used %d collectives, want 3 (uncompressed, P, Q)", c)
	}
	if c := stats[3].BytesSent - stats[2].BytesSent; c != 8*(cols+rows+cols) {
		t.Errorf("PowerSGD iteration sent %d bytes, want %d", c, 8*(cols+rows+cols))
	}
}

func TestPowerSGDErrorFeedback(t *testing.T) {
	for _, hook := range []kwargs.CommHookType{kwargs.CommHookPowerSGD, kwargs.CommHookBatchedPowerSGD} {
		t.Run(string(hook), func(t *testing.T) {
			const n, rows, cols, steps = 3, 12, 10, 6
			kw := kwargs.DistributedDataParallelKwargs{CommHook: hook,
				CommStateOption: map[string]any{"start_powerSGD_iter": 2, "matrix_approximation_rank": 2, "random_seed": 3}}
			gs := make([][]float64, n)
			for r := range gs {
				gs[r] = fill64(rand.New(rand.NewPCG(uint64(r), 1)), []int{rows * cols})[0]
			}
			outSum := make([][]float64, n)
			var psgds []*powerSGD[float64]
			var mu sync.Mutex
			onRanks(t, n, func(r *fakeReducer) error {
				m := &model64{params: [][]float64{make([]float64, rows*cols)}, grads: [][]float64{make([]float64, rows*cols)},
					shapes: [][]int{{rows, cols}}}
				d, err := Wrap(shaped64{m}, r, kw)
				if err != nil {
					return err
				}
				outSum[r.rank] = make([]float64, rows*cols)
				for it := 0; it < steps; it++ {
					copy(m.grads[0], gs[r.rank])
					if err := d.SyncGradients(); err != nil {
						return err
					}
					for i, v := range m.grads[0] {
						outSum[r.rank][i] += v
					}
				}
				mu.Lock()
				psgds = append(psgds, d.eng.(*typedEngine[float64]).psgd)
				mu.Unlock()
				if st := d.Stats(); st.Compressed != 1 || st.PowerSGDIter != steps {
					return fmt.Errorf("stats %+v", st)
				}
				return nil
			})
			var maxDiff, approxErr float64
			for i := 0; i < rows*cols; i++ {
				var gsum, esum float64
				for r := 0; r < n; r++ {
					gsum += gs[r][i]
					esum += psgds[r].errs[0][i]
				}
				for r := 1; r < n; r++ {
					if outSum[r][i] != outSum[0][i] {
						t.Fatal("ranks disagree")
					}
				}
				lhs := n * outSum[0][i]
				rhs := steps*gsum - esum
				maxDiff = max(maxDiff, math.Abs(lhs-rhs))
				approxErr = max(approxErr, math.Abs(outSum[0][i]-steps*gsum/n))
			}
			if maxDiff > 1e-9 {
				t.Fatalf("error feedback identity off by %g", maxDiff)
			}
			if approxErr < 1e-6 {
				t.Fatalf("a rank-2 approximation of a random 12x10 matrix cannot be exact (err %g): nothing was compressed", approxErr)
			}
		})
	}
}

func TestPowerSGDWithFP16Wrapper(t *testing.T) {
	const rows, cols = 16, 16
	var st0, st1 Stats
	onRanks(t, 2, func(r *fakeReducer) error {
		m := &model32{params: [][]float32{make([]float32, rows*cols)}, grads: [][]float32{make([]float32, rows*cols)}}
		d, err := Wrap32(m, r, kwargs.DistributedDataParallelKwargs{CommHook: "batched_power_sgd", CommWrapper: "fp16",
			CommStateOption: map[string]any{"start_powerSGD_iter": 2}})
		if err != nil {
			return err
		}
		for it := 0; it < 3; it++ {
			for i := range m.grads[0] {
				m.grads[0][i] = float32(i%7) * 0.25
			}
			if err := d.SyncGradients(); err != nil {
				return err
			}
			if r.rank == 0 && it == 1 {
				st0 = d.Stats()
			}
		}
		if r.rank == 0 {
			st1 = d.Stats()
		}
		return nil
	})
	// Vanilla iterations travel as fp16 (2 bytes each); the PowerSGD one sends
	// P and Q (16x1 each) as fp16.
	if st0.BytesSent != 2*2*rows*cols {
		t.Errorf("vanilla bytes %d", st0.BytesSent)
	}
	if d := st1.BytesSent - st0.BytesSent; d != 2*(rows+cols) {
		t.Errorf("PowerSGD bytes %d, want %d", d, 2*(rows+cols))
	}
}

func TestNoSyncAndErrors(t *testing.T) {
	onRanks(t, 2, func(r *fakeReducer) error {
		m := newModel64(r.rank, []int{3})
		d, err := Wrap(m, r, kwargs.DistributedDataParallelKwargs{})
		if err != nil {
			return err
		}
		before := append([]float64(nil), m.grads[0]...)
		err = d.NoSync(func() error { return d.SyncGradients() })
		if err != nil {
			return err
		}
		for i, v := range m.grads[0] {
			if v != before[i] {
				return errors.New("gradients synced inside NoSync")
			}
		}
		if st := d.Stats(); st.SkippedSyncs != 1 || st.Syncs != 0 {
			return fmt.Errorf("stats %+v", st)
		}
		if err := d.SyncGradients(); err != nil {
			return err
		}
		m.grads[0] = m.grads[0][:2]
		err = d.SyncGradients()
		if err == nil || !strings.Contains(err.Error(), "buffer 0 has 2 elements, 3 when the model was wrapped") {
			return fmt.Errorf("layout change: %v", err)
		}
		return nil
	})
	if _, err := WrapAny(struct{}{}, &fakeReducer{w: newWorld(1)}, kwargs.DistributedDataParallelKwargs{}); err == nil ||
		!strings.Contains(err.Error(), "cannot wrap struct {}") {
		t.Errorf("WrapAny: %v", err)
	}
	if _, err := Wrap(newModel64(0, []int{1}), &fakeReducer{w: newWorld(1)}, kwargs.DistributedDataParallelKwargs{CommHook: "int8"}); err == nil {
		t.Error("bad comm hook accepted")
	}
	if !IsModel(&model32{}) || IsModel(3) {
		t.Error("IsModel")
	}
}

// In one process without a comm hook, synchronising leaves the gradients
// as they are and calls no collective (the mean over one process).
func TestOneProcessSyncIsFree(t *testing.T) {
	m := newModel64(0, []int{1000, 10})
	want := fmt.Sprint(m.grads)
	w := onRanks(t, 1, func(r *fakeReducer) error {
		d, err := Wrap(m, r, kwargs.DistributedDataParallelKwargs{})
		if err != nil {
			return err
		}
		return d.SyncGradients()
	})
	if got := w.calls.Load(); got != 0 {
		t.Errorf("%d all-reduce calls in one process", got)
	}
	if fmt.Sprint(m.grads) != want {
		t.Error("the gradients changed")
	}
}
