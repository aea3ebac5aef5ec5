package ddp

import (
	"math"
	"math/rand/v2"

	"github.com/goaccel/goaccel/accelerate/kwargs"
)

// powerSGD is torch's PowerSGDState: options plus per-bucket memory.
type powerSGD[T float] struct {
	o      kwargs.PowerSGDOptions
	iter   int
	rng    *rand.Rand
	errs   [][]T // per bucket: error feedback
	ps, qs [][]T // per bucket: the low-rank factors (warm start)
	pad    [][]T // per bucket: padded square matrix (batched)
	cp     [][]T // per bucket: copy of the input (error feedback)
	unc    []T
}

func newPowerSGD[T float](o kwargs.PowerSGDOptions, nb int) *powerSGD[T] {
	return &powerSGD[T]{
		o:    o,
		rng:  rand.New(rand.NewPCG(uint64(o.RandomSeed), 0x9e3779b97f4a7c15)),
		errs: make([][]T, nb), ps: make([][]T, nb), qs: make([][]T, nb),
		pad: make([][]T, nb), cp: make([][]T, nb),
	}
}

// lowRank is one compressed matrix: M (rows×cols, row-major, a view into the
// bucket) ≈ P Qᵀ with P rows×r and Q cols×r (row-major views into the
// bucket's P and Q memory).
type lowRank[T float] struct {
	m          []T
	rows, cols int
	r          int
	p, q       []T
}

// wireKind is how PowerSGD's all-reduces travel: 16-bit with a wrapper.
func (e *typedEngine[T]) wireKind() kwargs.CommHookType {
	if e.wrapper == kwargs.CommHookFP16 || e.wrapper == kwargs.CommHookBF16 {
		return e.wrapper
	}
	return kwargs.CommHookNo
}

// averageWire averages f with the wrapper's transport.
func (e *typedEngine[T]) averageWire(f []T, st *Stats) error {
	if k := e.wireKind(); k != kwargs.CommHookNo {
		return e.sum16(f, 1/float32(e.r.WorldSize()), k, st)
	}
	return e.average(f, st)
}

func (e *typedEngine[T]) powerSGDBucket(b int, st *Stats) error {
	s := e.psgd
	f := e.flat[b]
	if s.iter < s.o.StartPowerSGDIter {
		return e.averageWire(f, st)
	}
	input := f
	if e.hook == kwargs.CommHookBatchedPowerSGD {
		side := int(math.Ceil(math.Sqrt(float64(len(f)))))
		if s.pad[b] == nil {
			s.pad[b] = make([]T, side*side)
		}
		input = s.pad[b]
		copy(input, f)
		clear(input[len(f):])
	}
	if s.o.UseErrorFeedback {
		if s.errs[b] == nil {
			s.errs[b] = make([]T, len(input))
		} else {
			for i, v := range s.errs[b] {
				input[i] += v
			}
		}
		if s.cp[b] == nil {
			s.cp[b] = make([]T, len(input))
		}
		copy(s.cp[b], input)
	}

	// Split the bucket into compressed matrices and uncompressed tensors.
	var mats []lowRank[T]
	var unc [][]T
	if e.hook == kwargs.CommHookBatchedPowerSGD {
		side := int(math.Sqrt(float64(len(input))))
		r := min(side, s.o.MatrixApproximationRank)
		mats = append(mats, lowRank[T]{m: input, rows: side, cols: side, r: r})
	} else {
		off := 0
		for _, pi := range e.bkts[b].Params {
			n := e.sizes[pi]
			t := input[off : off+n]
			off += n
			if e.shapes != nil && len(e.shapes[pi]) >= 2 && n > 0 {
				rows := e.shapes[pi][0]
				cols := n / rows
				r := min(rows, cols, s.o.MatrixApproximationRank)
				if float64((rows+cols)*r)*s.o.MinCompressionRate < float64(rows*cols) {
					mats = append(mats, lowRank[T]{m: t, rows: rows, cols: cols, r: r})
					continue
				}
			}
			unc = append(unc, t)
		}
	}
	st.Compressed += len(mats)

	// Uncompressed tensors: averaged as one contiguous batch.
	if len(unc) > 0 {
		n := 0
		for _, t := range unc {
			n += len(t)
		}
		if cap(s.unc) < n {
			s.unc = make([]T, n)
		}
		buf := s.unc[:n]
		off := 0
		for _, t := range unc {
			off += copy(buf[off:], t)
		}
		if err := e.averageWire(buf, st); err != nil {
			return err
		}
		off = 0
		for _, t := range unc {
			off += copy(t, buf[off:])
		}
	}

	if len(mats) > 0 {
		np, nq := 0, 0
		for _, m := range mats {
			np += m.rows * m.r
			nq += m.cols * m.r
		}
		randomize := !s.o.WarmStart || len(s.qs[b]) != nq || len(s.ps[b]) != np
		if len(s.ps[b]) != np {
			s.ps[b] = make([]T, np)
		}
		if len(s.qs[b]) != nq {
			s.qs[b] = make([]T, nq)
		}
		op, oq := 0, 0
		for i := range mats {
			mats[i].p = s.ps[b][op : op+mats[i].rows*mats[i].r]
			mats[i].q = s.qs[b][oq : oq+mats[i].cols*mats[i].r]
			op += len(mats[i].p)
			oq += len(mats[i].q)
		}
		if randomize {
			// Same seed sequence on every rank: the initial Qs agree.
			g := rand.New(rand.NewPCG(s.rng.Uint64(), s.rng.Uint64()))
			for i := range s.qs[b] {
				s.qs[b][i] = T(g.NormFloat64())
			}
		}
		eps := s.o.OrthogonalizationEpsilon
		for _, m := range mats {
			orthogonalize(m.q, m.cols, m.r, eps)
			matMul(m.m, m.q, m.p, m.rows, m.cols, m.r) // P = M Q
		}
		if err := e.sum(s.ps[b], e.wireKind(), st); err != nil {
			return err
		}
		for _, m := range mats {
			orthogonalize(m.p, m.rows, m.r, eps)
			matTMul(m.m, m.p, m.q, m.rows, m.cols, m.r) // Q = Mᵀ P
		}
		if err := e.sum(s.qs[b], e.wireKind(), st); err != nil {
			return err
		}
		w := T(e.r.WorldSize())
		for _, m := range mats {
			outer(m.p, m.q, m.m, m.rows, m.cols, m.r) // M = P Qᵀ
			for i := range m.m {
				m.m[i] /= w
			}
		}
	}

	if s.o.UseErrorFeedback {
		for i, v := range input {
			s.errs[b][i] = s.cp[b][i] - v
		}
	}
	if e.hook == kwargs.CommHookBatchedPowerSGD {
		copy(f, input[:len(f)])
	}
	return nil
}

// orthogonalize applies Gram-Schmidt to the r columns of the row-major
// rows×r matrix a (torch's _orthogonalize). A zero column is left zero
// instead of being divided by zero (torch yields NaN there when epsilon is 0).
func orthogonalize[T float](a []T, rows, r int, eps float64) {
	for i := 0; i < r; i++ {
		var ss float64
		for k := 0; k < rows; k++ {
			v := float64(a[k*r+i])
			ss += v * v
		}
		norm := math.Sqrt(ss) + eps
		if norm != 0 {
			inv := T(1 / norm)
			for k := 0; k < rows; k++ {
				a[k*r+i] *= inv
			}
		}
		for j := i + 1; j < r; j++ {
			var dot T
			for k := 0; k < rows; k++ {
				dot += a[k*r+i] * a[k*r+j]
			}
			for k := 0; k < rows; k++ {
				a[k*r+j] -= dot * a[k*r+i]
			}
		}
	}
}

// matMul: p (rows×r) = m (rows×cols) · q (cols×r).
func matMul[T float](m, q, p []T, rows, cols, r int) {
	clear(p)
	for i := 0; i < rows; i++ {
		row := m[i*cols : (i+1)*cols]
		pr := p[i*r : (i+1)*r]
		for j, v := range row {
			if v == 0 {
				continue
			}
			qr := q[j*r : (j+1)*r]
			for k := range pr {
				pr[k] += v * qr[k]
			}
		}
	}
}

// matTMul: q (cols×r) = mᵀ (cols×rows) · p (rows×r).
func matTMul[T float](m, p, q []T, rows, cols, r int) {
	clear(q)
	for i := 0; i < rows; i++ {
		row := m[i*cols : (i+1)*cols]
		pr := p[i*r : (i+1)*r]
		for j, v := range row {
			if v == 0 {
				continue
			}
			qr := q[j*r : (j+1)*r]
			for k := range qr {
				qr[k] += v * pr[k]
			}
		}
	}
}

// outer: m (rows×cols) = p (rows×r) · qᵀ (r×cols).
func outer[T float](p, q, m []T, rows, cols, r int) {
	for i := 0; i < rows; i++ {
		pr := p[i*r : (i+1)*r]
		for j := 0; j < cols; j++ {
			qr := q[j*r : (j+1)*r]
			var s T
			for k := range pr {
				s += pr[k] * qr[k]
			}
			m[i*cols+j] = s
		}
	}
}
