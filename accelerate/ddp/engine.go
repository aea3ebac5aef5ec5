package ddp

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/goaccel/goaccel/accelerate/amp"
	"github.com/goaccel/goaccel/accelerate/kwargs"
)

type float interface{ ~float32 | ~float64 }

func sizeOf[T float]() int {
	var z T
	return int(unsafe.Sizeof(z))
}

// typedEngine does the work for one element type.
type typedEngine[T float] struct {
	r             Reducer
	kw            kwargs.DistributedDataParallelKwargs
	params, grads func() [][]T
	bufs          func() [][]T
	allReduce     func([]T, string) error
	bcast         func([]T, int) error
	hook, wrapper kwargs.CommHookType

	sizes  []int
	shapes [][]int
	bkts   []Bucket
	flat   [][]T // one scratch buffer per bucket
	f32    []float32
	enc    []byte
	u16    []uint16
	psgd   *powerSGD[T]
}

// layout assigns parameters to buckets in reverse order (gradients become
// ready roughly in reverse during backward, which is why torch does it),
// closing a bucket when the next tensor would push it past capBytes; a
// tensor larger than the cap gets a bucket of its own.
func (e *typedEngine[T]) layout(capBytes int) {
	es := sizeOf[T]()
	var cur Bucket
	for i := len(e.sizes) - 1; i >= 0; i-- {
		n := e.sizes[i]
		if len(cur.Params) > 0 && (cur.Len+n)*es > capBytes {
			e.bkts = append(e.bkts, cur)
			cur = Bucket{}
		}
		cur.Params = append(cur.Params, i)
		cur.Len += n
	}
	if len(cur.Params) > 0 {
		e.bkts = append(e.bkts, cur)
	}
	e.flat = make([][]T, len(e.bkts))
	for b, bk := range e.bkts {
		e.flat[b] = make([]T, bk.Len)
	}
}

func (e *typedEngine[T]) buckets() []Bucket {
	out := make([]Bucket, len(e.bkts))
	for i, b := range e.bkts {
		out[i] = Bucket{Params: append([]int(nil), b.Params...), Len: b.Len}
	}
	return out
}

func (e *typedEngine[T]) check(ts [][]T, what string) error {
	if len(ts) != len(e.sizes) {
		return fmt.Errorf("%s: the model now has %d buffers, %d when it was wrapped%s", what, len(ts), len(e.sizes), e.staticHint())
	}
	for i, t := range ts {
		if len(t) != e.sizes[i] {
			return fmt.Errorf("%s: buffer %d has %d elements, %d when the model was wrapped%s", what, i, len(t), e.sizes[i], e.staticHint())
		}
	}
	return nil
}

func (e *typedEngine[T]) staticHint() string {
	if e.kw.StaticGraph {
		return " (static_graph=True promises a fixed layout)"
	}
	return " (the bucket layout is fixed at Wrap)"
}

func (e *typedEngine[T]) pack(b int, ts [][]T) []T {
	f := e.flat[b]
	off := 0
	for _, i := range e.bkts[b].Params {
		off += copy(f[off:], ts[i])
	}
	return f
}

func (e *typedEngine[T]) unpack(b int, ts [][]T) {
	f := e.flat[b]
	off := 0
	for _, i := range e.bkts[b].Params {
		off += copy(ts[i], f[off:])
	}
}

func (e *typedEngine[T]) broadcastParams() error {
	ps := e.params()
	if err := e.check(ps, "parameters"); err != nil {
		return err
	}
	for b := range e.bkts {
		f := e.pack(b, ps)
		if err := e.bcast(f, 0); err != nil {
			return fmt.Errorf("bucket %d: %w", b, err)
		}
		e.unpack(b, ps)
	}
	return nil
}

func (e *typedEngine[T]) broadcastBuffers() error {
	if e.bufs == nil {
		return nil
	}
	for i, buf := range e.bufs() {
		if len(buf) == 0 {
			continue
		}
		if err := e.bcast(buf, 0); err != nil {
			return fmt.Errorf("buffer %d: %w", i, err)
		}
	}
	return nil
}

func (e *typedEngine[T]) sync(st *Stats) error {
	gs := e.grads()
	if err := e.check(gs, "gradients"); err != nil {
		return err
	}
	if e.r.WorldSize() == 1 && e.hook == kwargs.CommHookNo && e.wrapper == kwargs.CommHookNo {
		return nil // the mean over one process is its gradients: nothing to pack or send
	}
	st.Compressed = 0
	for b := range e.bkts {
		f := e.pack(b, gs)
		var err error
		switch e.hook {
		case kwargs.CommHookFP16, kwargs.CommHookBF16:
			if e.wrapper == kwargs.CommHookFP16 || e.wrapper == kwargs.CommHookBF16 {
				roundTo(e.wrapper, f)
			}
			err = e.average16(f, e.hook, st)
		case kwargs.CommHookPowerSGD, kwargs.CommHookBatchedPowerSGD:
			err = e.powerSGDBucket(b, st)
		default:
			err = e.average(f, st)
		}
		if err != nil {
			return fmt.Errorf("bucket %d of %d: %w", b, len(e.bkts), err)
		}
		e.unpack(b, gs)
	}
	if e.psgd != nil {
		e.psgd.iter++
		st.PowerSGDIter = e.psgd.iter
	}
	return nil
}

// average replaces f with the mean over ranks: one all-reduce (sum), then a
// division by the world size.
func (e *typedEngine[T]) average(f []T, st *Stats) error {
	if err := e.sum(f, kwargs.CommHookNo, st); err != nil {
		return err
	}
	w := T(e.r.WorldSize())
	for i := range f {
		f[i] /= w
	}
	return nil
}

// sum replaces f with the element-wise sum over ranks, in the element type
// (kind "no") or as 16-bit values (kind "fp16"/"bf16").
func (e *typedEngine[T]) sum(f []T, kind kwargs.CommHookType, st *Stats) error {
	if len(f) == 0 {
		return nil
	}
	if kind == kwargs.CommHookFP16 || kind == kwargs.CommHookBF16 {
		return e.sum16(f, 1, kind, st)
	}
	st.Collectives++
	st.BytesSent += int64(len(f) * sizeOf[T]())
	if err := e.allReduce(f, OpSum); err != nil {
		return fmt.Errorf("all-reduce of %d elements: %w", len(f), err)
	}
	return nil
}

// average16 is torch's fp16/bf16_compress_hook: divide by the world size,
// compress to 16 bits, exchange, decompress and sum (in float32 here).
func (e *typedEngine[T]) average16(f []T, kind kwargs.CommHookType, st *Stats) error {
	return e.sum16(f, 1/float32(e.r.WorldSize()), kind, st)
}

// sum16 replaces f with Σ_ranks round16(f·pre): every rank encodes its
// values as IEEE half or bfloat16 (2 bytes each on the wire), gathers every
// rank's encoding and adds the decoded values in float32, in rank order, so
// that every rank gets the same bits.
func (e *typedEngine[T]) sum16(f []T, pre float32, kind kwargs.CommHookType, st *Stats) error {
	if len(f) == 0 {
		return nil
	}
	n := len(f)
	conv := amp.Float32ToFloat16
	back := amp.Float16ToFloat32
	if kind == kwargs.CommHookBF16 {
		conv, back = amp.Float32ToBFloat16, amp.BFloat16ToFloat32
	}
	if r16, ok := e.r.(Reducer16); ok && e.r.WorldSize() > 1 {
		return e.sum16Native(r16, f, pre, kind, conv, back, st)
	}
	if cap(e.enc) < 2*n {
		e.enc = make([]byte, 2*n)
	}
	enc := e.enc[:2*n]
	for i, v := range f {
		binary.LittleEndian.PutUint16(enc[2*i:], conv(float32(v)*pre))
	}
	st.Collectives++
	st.BytesSent += int64(len(enc))
	parts, err := e.r.AllGatherBytes(enc)
	if err != nil {
		return fmt.Errorf("all-gather of %d %s values: %w", n, kind, err)
	}
	if len(parts) != e.r.WorldSize() {
		return fmt.Errorf("all-gather returned %d parts for world size %d", len(parts), e.r.WorldSize())
	}
	for rk, p := range parts {
		if len(p) != len(enc) {
			return fmt.Errorf("rank %d sent %d bytes of %s values, want %d (do all ranks wrap the same model?)", rk, len(p), kind, len(enc))
		}
	}
	if cap(e.f32) < n {
		e.f32 = make([]float32, n)
	}
	acc := e.f32[:n]
	clear(acc)
	for _, p := range parts {
		for i := range acc {
			acc[i] += back(binary.LittleEndian.Uint16(p[2*i:]))
		}
	}
	for i, v := range acc {
		f[i] = T(v)
	}
	return nil
}

func roundTo[T float](kind kwargs.CommHookType, f []T) {
	r := amp.RoundFP16
	if kind == kwargs.CommHookBF16 {
		r = amp.RoundBF16
	}
	for i, v := range f {
		f[i] = T(r(float32(v)))
	}
}

// sum16Native is sum16 over a Reducer16: the encoded values are summed by
// the reducer in 16 bits (the result is rounded to 16 bits, as torch's
// fp16_compress_hook all-reduces a float16 tensor).
func (e *typedEngine[T]) sum16Native(r Reducer16, f []T, pre float32, kind kwargs.CommHookType,
	conv func(float32) uint16, back func(uint16) float32, st *Stats) error {
	n := len(f)
	if cap(e.u16) < n {
		e.u16 = make([]uint16, n)
	}
	h := e.u16[:n]
	for i, v := range f {
		h[i] = conv(float32(v) * pre)
	}
	st.Collectives++
	st.BytesSent += int64(2 * n)
	if err := r.AllReduce16(h, string(kind)); err != nil {
		return fmt.Errorf("16-bit all-reduce of %d %s values: %w", n, kind, err)
	}
	for i, v := range h {
		f[i] = T(back(v))
	}
	return nil
}
