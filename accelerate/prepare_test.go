package accelerate

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/accelerate/ddp"
	"github.com/goaccel/goaccel/accelerate/kwargs"
)

// linear is y = w·x + b with a mean-squared-error loss (ddp.Model).
type linear struct {
	params, grads [][]float64
}

func newLinear(w []float64, b float64) *linear {
	return &linear{
		params: [][]float64{append([]float64(nil), w...), {b}},
		grads:  [][]float64{make([]float64, len(w)), {0}},
	}
}

func (m *linear) Parameters() [][]float64 { return m.params }
func (m *linear) Gradients() [][]float64  { return m.grads }

// backward fills the gradients of the MSE over (xs, ys).
func (m *linear) backward(xs [][]float64, ys []float64) {
	w, b := m.params[0], m.params[1][0]
	gw, gb := m.grads[0], m.grads[1]
	clear(gw)
	gb[0] = 0
	for i, x := range xs {
		e := b - ys[i]
		for j := range w {
			e += w[j] * x[j]
		}
		for j := range w {
			gw[j] += 2 * e * x[j] / float64(len(xs))
		}
		gb[0] += 2 * e / float64(len(xs))
	}
}

func (m *linear) step(lr float64) {
	for i, p := range m.params {
		for j := range p {
			p[j] -= lr * m.grads[i][j]
		}
	}
}

func flat(bs [][]float64) []float64 {
	var out []float64
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}

// rankData is rank r's shard: 4 samples of y = 1·x0 - 2·x1 + 0.5·x2 + 3.
func rankData(r int) ([][]float64, []float64) {
	var xs [][]float64
	var ys []float64
	for i := 0; i < 4; i++ {
		x := []float64{float64(r*4+i) / 7, math.Sin(float64(r*4 + i)), float64((r*4+i)%3) - 1}
		xs = append(xs, x)
		ys = append(ys, x[0]-2*x[1]+0.5*x[2]+3)
	}
	return xs, ys
}

func setHandlers(t *testing.T, accs []*Accelerator, hs ...any) {
	t.Helper()
	set, err := kwargs.ValidateHandlers(hs, "no")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range accs {
		a.handlers = set
	}
}

type optimizer struct{ lr float64 }

type shardable struct{ items []int }

func (s shardable) Shard(n, idx int) (any, error) {
	start, end := splitRange(len(s.items), n, idx)
	return s.items[start:end], nil
}

func TestPrepareAveragesGradients(t *testing.T) {
	accs := accelerators(t, 2)
	setHandlers(t, accs, kwargs.DistributedDataParallelKwargs{BucketCapMB: 1e-5}) // several buckets
	w0, b0 := []float64{0.1, -0.2, 0.3}, 0.05

	// The expected average gradient, from rank 0's initial parameters.
	var want []float64
	for r := 0; r < 2; r++ {
		m := newLinear(w0, b0)
		xs, ys := rankData(r)
		m.backward(xs, ys)
		g := flat(m.grads)
		if want == nil {
			want = g
			continue
		}
		for i := range want {
			want[i] = (want[i] + g[i]) / 2
		}
	}

	opt := &optimizer{lr: 0.1}
	data := []float64{1, 2, 3}
	err := each(accs, func(a *Accelerator) error {
		r := a.ProcessIndex()
		m := newLinear(w0, b0)
		if r == 1 {
			m = newLinear([]float64{9, 9, 9}, -9) // replaced by rank 0's parameters
		}
		out, err := a.Prepare(m, opt, data, shardable{[]int{0, 1, 2, 3, 4}})
		if err != nil {
			return err
		}
		d, ok := out[0].(*ddp.DDP)
		if !ok || out[1] != opt || fmt.Sprint(out[2]) != "[1 2 3]" || d.Module() != m || a.UnwrapModel(d) != m {
			return fmt.Errorf("Prepare returned %T %v %v", out[0], out[1], out[2])
		}
		if shard := fmt.Sprint(out[3]); shard != [...]string{"[0 1 2]", "[3 4]"}[r] {
			return fmt.Errorf("rank %d shard %s", r, shard)
		}
		if again, err := a.Prepare(d); err != nil || again[0] != d {
			return fmt.Errorf("re-preparing a DDP: %v %v", again, err)
		}
		if red, err := a.Reducer(); err != nil {
			return err
		} else if _, ok := red.(ddp.Reducer16); !ok || red.WorldSize() != 2 {
			return fmt.Errorf("the group's reducer %T has no 16-bit all-reduce", red)
		}
		if len(d.Buckets()) < 2 {
			return fmt.Errorf("buckets %v", d.Buckets())
		}
		if fmt.Sprint(flat(m.params)) != fmt.Sprint(append(append([]float64(nil), w0...), b0)) {
			return fmt.Errorf("rank %d parameters after Prepare: %v", r, m.params)
		}
		xs, ys := rankData(r)
		m.backward(xs, ys)
		if err := a.SyncGradients(d); err != nil {
			return err
		}
		for i, g := range flat(m.grads) {
			if math.Abs(g-want[i]) > 1e-12 {
				return fmt.Errorf("rank %d gradient %d = %v, want %v", r, i, g, want[i])
			}
		}
		m.step(opt.lr)
		all, err := a.GatherFloat64s(flat(m.params))
		if err != nil {
			return err
		}
		for i := 0; i < len(all)/2; i++ {
			if all[i] != all[i+len(all)/2] {
				return fmt.Errorf("parameters differ after a step: %v", all)
			}
		}
		if err := a.SyncGradients(m); err == nil {
			return fmt.Errorf("SyncGradients accepted an unprepared model")
		}
		if _, err := a.PrepareModel(opt); err == nil || !strings.Contains(err.Error(), "is not a model") {
			return fmt.Errorf("PrepareModel(optimizer): %v", err)
		}
		if p, err := a.PrepareData([]string{"a", "b", "c"}, true); err != nil || fmt.Sprint(p) != [...]string{"[a b]", "[c c]"}[r] {
			return fmt.Errorf("PrepareData = %v, %v", p, err)
		}
		if _, err := a.PrepareData(map[int]int{}, false); err == nil {
			return fmt.Errorf("PrepareData accepted a map")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// big is a float32 model large enough for the ring path of the 16-bit
// all-reduce.
type big struct{ p, g [][]float32 }

func (m *big) Parameters32() [][]float32 { return m.p }
func (m *big) Gradients32() [][]float32  { return m.g }

func TestPrepareCompressedHooks(t *testing.T) {
	for _, hook := range []kwargs.CommHookType{kwargs.CommHookFP16, kwargs.CommHookBF16} {
		t.Run(string(hook), func(t *testing.T) {
			const n = 3
			accs := accelerators(t, n)
			sizes := []int{5, 40000} // a direct and a ring all-reduce
			grads := func(r int) [][]float32 {
				out := make([][]float32, len(sizes))
				for i, s := range sizes {
					out[i] = make([]float32, s)
					for j := range out[i] {
						out[i][j] = float32(math.Sin(float64(j*(r+1)+i))) * float32(r+1)
					}
				}
				return out
			}
			// Uncompressed reference.
			want := make([][]float64, len(sizes))
			for i, s := range sizes {
				want[i] = make([]float64, s)
				for r := 0; r < n; r++ {
					for j, v := range grads(r)[i] {
						want[i][j] += float64(v) / n
					}
				}
			}
			for _, capMB := range []float64{0, 0.05} { // one bucket; one per tensor
				setHandlers(t, accs, kwargs.DistributedDataParallelKwargs{CommHook: hook, BucketCapMB: capMB})
				err := each(accs, func(a *Accelerator) error {
					r := a.ProcessIndex()
					m := &big{p: grads(0), g: grads(r)}
					d, err := a.PrepareModel(m)
					if err != nil {
						return err
					}
					if err := a.SyncGradients(d); err != nil {
						return err
					}
					tol := 2e-3 // fp16: 11 significant bits, ~3 roundings
					if hook == kwargs.CommHookBF16 {
						tol = 2e-2
					}
					for i := range sizes {
						for j, g := range m.g[i] {
							if e := math.Abs(float64(g) - want[i][j]); e > tol*max(1, math.Abs(want[i][j])) {
								return fmt.Errorf("rank %d grad[%d][%d] = %v, want %v", r, i, j, g, want[i][j])
							}
						}
					}
					// 2 bytes per element handed to the 16-bit all-reduce.
					if st := d.Stats(); st.BytesSent != int64(2*(sizes[0]+sizes[1])) {
						return fmt.Errorf("bytes sent %d", st.BytesSent)
					}
					all, err := a.GatherFloat32s(m.g[1])
					if err != nil {
						return err
					}
					for j := range m.g[1] {
						if all[j] != all[j+len(m.g[1])] || all[j] != all[j+2*len(m.g[1])] {
							return fmt.Errorf("ranks disagree on gradient %d", j)
						}
					}
					return nil
				})
				if err != nil {
					t.Fatalf("bucket_cap_mb=%v: %v", capMB, err)
				}
			}
		})
	}
}

func TestPrepareSingleProcess(t *testing.T) {
	fresh(t)
	a, err := NewAccelerator(withEnv(envMap(nil)), WithKwargsHandlers(kwargs.DistributedDataParallelKwargs{CommHook: kwargs.CommHookFP16}))
	if err != nil {
		t.Fatal(err)
	}
	m := newLinear([]float64{1, 2, 3}, 4)
	out, err := a.Prepare(m)
	if err != nil {
		t.Fatal(err)
	}
	d := out[0].(*ddp.DDP)
	m.grads[0][0] = 1.0000001 // not representable in fp16: untouched without a group
	if err := a.SyncGradients(d); err != nil || m.grads[0][0] != 1.0000001 {
		t.Fatalf("single-process SyncGradients: %v, %v", m.grads[0][0], err)
	}
	if st := d.Stats(); st.Syncs != 1 {
		t.Fatalf("stats %+v", st)
	}
	r, err := a.Reducer()
	if err != nil || r.WorldSize() != 1 {
		t.Fatalf("Reducer: %v %v", r, err)
	}
	if p, err := a.PrepareData([]int{1, 2, 3}, false); err != nil || fmt.Sprint(p) != "[1 2 3]" {
		t.Fatalf("PrepareData: %v %v", p, err)
	}
	if err := a.EndTraining(); err != nil {
		t.Fatal(err)
	}
}
