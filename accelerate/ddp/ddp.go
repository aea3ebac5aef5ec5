package ddp

import (
	"errors"
	"fmt"
	"sync"

	"github.com/goaccel/goaccel/accelerate/kwargs"
)

// OpSum is the reduction DDP asks the Reducer for.
const OpSum = "sum"

// Reducer is the set of collectives the wrapper needs; every rank must call
// them in the same order with buffers of the same length. The Accelerator
// adapts its process group to it (pg.Group has all of them, with a context).
type Reducer interface {
	// Rank is this process's rank, in [0, WorldSize()).
	Rank() int
	// WorldSize is the number of ranks.
	WorldSize() int
	// AllReduceFloat64 reduces buf element-wise across all ranks in place
	// (op is "sum"); every rank must end with the same values.
	AllReduceFloat64(buf []float64, op string) error
	// AllReduceFloat32 is AllReduceFloat64 for float32.
	AllReduceFloat32(buf []float32, op string) error
	// BroadcastFloat64 overwrites buf on every rank with root's buf.
	BroadcastFloat64(buf []float64, root int) error
	// BroadcastFloat32 is BroadcastFloat64 for float32.
	BroadcastFloat32(buf []float32, root int) error
	// AllGatherBytes returns every rank's data, indexed by rank. The 16-bit
	// compression hooks send their encoded buckets with it.
	AllGatherBytes(data []byte) ([][]byte, error)
}

// Reducer16 is optionally implemented by a Reducer that can all-reduce
// 16-bit floating-point values natively (the Accelerator's process group
// does, with a ring whose wire values are 16 bits). The fp16/bf16 comm hooks
// (and the comm wrappers of PowerSGD) then send 2 bytes per element through
// the ring, about 2·(n-1)/n of the bucket's 16-bit size per rank whatever
// the world size n, instead of all-gathering every rank's 16-bit bucket
// (n-1 times that size).
type Reducer16 interface {
	// AllReduce16 sums buf element-wise across all ranks in place; buf holds
	// IEEE half ("fp16") or bfloat16 ("bf16") bit patterns, as kind says.
	// Every rank must end with the same values.
	AllReduce16(buf []uint16, kind string) error
}

// Model is a float64 model: its parameters and their gradients as flat
// buffers, one per tensor. Both methods must return the live buffers (writes
// through them change the model), with the same number and lengths of
// buffers on every call and every rank, gradients parallel to parameters.
type Model interface {
	Parameters() [][]float64
	Gradients() [][]float64
}

// Model32 is Model for float32 models.
type Model32 interface {
	Parameters32() [][]float32
	Gradients32() [][]float32
}

// Shaped is optionally implemented by a model to give each parameter's shape
// (row-major; the product must equal the buffer's length). The PowerSGD hook
// compresses only tensors with at least two dimensions, viewed as
// shape[0] × (the rest) matrices, as torch does.
type Shaped interface {
	Shapes() [][]int
}

// Buffered is optionally implemented by a float64 model with non-trainable
// state (torch's buffers, e.g. batch-norm running statistics): rank 0's
// buffers are broadcast at Wrap and by SyncBuffers when broadcast_buffers is
// on.
type Buffered interface {
	Buffers() [][]float64
}

// Buffered32 is Buffered for float32 models.
type Buffered32 interface {
	Buffers32() [][]float32
}

// Stats counts what the wrapper sent.
type Stats struct {
	Syncs        int   // SyncGradients calls that reduced
	SkippedSyncs int   // SyncGradients calls inside NoSync
	Collectives  int   // Reducer calls made by SyncGradients
	BytesSent    int64 // payload bytes handed to the Reducer by SyncGradients (this rank's contribution)
	PowerSGDIter int   // PowerSGD's iteration counter (torch's state.iter)
	Compressed   int   // tensors (or buckets, batched) PowerSGD compressed on the last sync
}

// Bucket describes one gradient bucket: the parameter indices it packs (in
// packing order) and its length in elements.
type Bucket struct {
	Params []int
	Len    int
}

// DDP is a wrapped model. Its methods are safe for concurrent use, but a
// rank's collectives must still be issued in the same order as the other
// ranks'.
type DDP struct {
	mu     sync.Mutex
	model  any
	kw     kwargs.DistributedDataParallelKwargs
	eng    engine
	noSync bool
	stats  Stats
}

type engine interface {
	broadcastParams() error
	broadcastBuffers() error
	sync(st *Stats) error
	buckets() []Bucket
}

// Wrap validates kw, lays out the gradient buckets and broadcasts rank 0's
// parameters (and buffers) to every rank.
func Wrap(model Model, r Reducer, kw kwargs.DistributedDataParallelKwargs) (*DDP, error) {
	if model == nil {
		return nil, errors.New("ddp: Wrap: nil model")
	}
	var bufs func() [][]float64
	if b, ok := model.(Buffered); ok {
		bufs = b.Buffers
	}
	return wrap(model, r, kw, model.Parameters, model.Gradients, bufs,
		r.AllReduceFloat64, r.BroadcastFloat64)
}

// Wrap32 is Wrap for float32 models.
func Wrap32(model Model32, r Reducer, kw kwargs.DistributedDataParallelKwargs) (*DDP, error) {
	if model == nil {
		return nil, errors.New("ddp: Wrap32: nil model")
	}
	var bufs func() [][]float32
	if b, ok := model.(Buffered32); ok {
		bufs = b.Buffers32
	}
	return wrap(model, r, kw, model.Parameters32, model.Gradients32, bufs,
		r.AllReduceFloat32, r.BroadcastFloat32)
}

// WrapAny wraps a Model or a Model32 (for Accelerator.Prepare); anything else
// is an error.
func WrapAny(model any, r Reducer, kw kwargs.DistributedDataParallelKwargs) (*DDP, error) {
	switch m := model.(type) {
	case Model:
		return Wrap(m, r, kw)
	case Model32:
		return Wrap32(m, r, kw)
	}
	return nil, fmt.Errorf("ddp: cannot wrap %T: a model needs Parameters()/Gradients() [][]float64 (ddp.Model) "+
		"or Parameters32()/Gradients32() [][]float32 (ddp.Model32)", model)
}

// IsModel reports whether v can be wrapped (implements Model or Model32).
func IsModel(v any) bool {
	switch v.(type) {
	case Model, Model32:
		return true
	}
	return false
}

func wrap[T float](model any, r Reducer, kw kwargs.DistributedDataParallelKwargs,
	params, grads, bufs func() [][]T, allReduce func([]T, string) error, bcast func([]T, int) error) (*DDP, error) {
	if r == nil {
		return nil, errors.New("ddp: Wrap: nil Reducer")
	}
	if err := kw.Validate(); err != nil {
		return nil, fmt.Errorf("ddp: DistributedDataParallelKwargs: %w", err)
	}
	if w := r.WorldSize(); w < 1 || r.Rank() < 0 || r.Rank() >= w {
		return nil, fmt.Errorf("ddp: Reducer reports rank %d of world size %d", r.Rank(), w)
	}
	e := &typedEngine[T]{r: r, kw: kw, params: params, grads: grads, bufs: bufs, allReduce: allReduce, bcast: bcast,
		hook: kw.EffectiveCommHook(), wrapper: kw.EffectiveCommWrapper()}
	ps := params()
	gs := grads()
	if len(ps) != len(gs) {
		return nil, fmt.Errorf("ddp: model has %d parameter buffers but %d gradient buffers", len(ps), len(gs))
	}
	e.sizes = make([]int, len(ps))
	for i := range ps {
		if len(ps[i]) != len(gs[i]) {
			return nil, fmt.Errorf("ddp: parameter %d has %d elements but its gradient has %d", i, len(ps[i]), len(gs[i]))
		}
		e.sizes[i] = len(ps[i])
	}
	if s, ok := model.(Shaped); ok {
		shapes := s.Shapes()
		if len(shapes) != len(ps) {
			return nil, fmt.Errorf("ddp: Shapes() gives %d shapes for %d parameters", len(shapes), len(ps))
		}
		for i, sh := range shapes {
			n := 1
			for _, d := range sh {
				n *= d
			}
			if n != e.sizes[i] {
				return nil, fmt.Errorf("ddp: parameter %d: shape %v has %d elements, the buffer %d", i, sh, n, e.sizes[i])
			}
		}
		e.shapes = shapes
	}
	e.layout(kw.BucketCapBytes())
	if e.hook == kwargs.CommHookPowerSGD || e.hook == kwargs.CommHookBatchedPowerSGD {
		o, err := kw.PowerSGDOptions()
		if err != nil {
			return nil, fmt.Errorf("ddp: %w", err)
		}
		e.psgd = newPowerSGD[T](o, len(e.bkts))
	}
	if err := e.broadcastParams(); err != nil {
		return nil, fmt.Errorf("ddp: Wrap: broadcasting rank 0's parameters: %w", err)
	}
	if err := e.broadcastBuffers(); err != nil {
		return nil, fmt.Errorf("ddp: Wrap: broadcasting rank 0's buffers: %w", err)
	}
	return &DDP{model: model, kw: kw, eng: e}, nil
}

// Module returns the wrapped model (torch's ddp_model.module).
func (d *DDP) Module() any { return d.model }

// Kwargs returns the configuration the model was wrapped with.
func (d *DDP) Kwargs() kwargs.DistributedDataParallelKwargs { return d.kw }

// Buckets returns the bucket layout fixed at Wrap.
func (d *DDP) Buckets() []Bucket { return d.eng.buckets() }

// Stats returns the communication counters.
func (d *DDP) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// SyncGradients averages the model's gradients across all ranks, in place,
// with the configured comm hook. Call it on every rank after each backward
// pass (inside NoSync it does nothing, so that gradients accumulate locally).
func (d *DDP) SyncGradients() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.noSync {
		d.stats.SkippedSyncs++
		return nil
	}
	if err := d.eng.sync(&d.stats); err != nil {
		return fmt.Errorf("ddp: SyncGradients: %w", err)
	}
	d.stats.Syncs++
	return nil
}

// SyncBuffers broadcasts rank 0's buffers (Buffered / Buffered32) to every
// rank when broadcast_buffers is on (torch does it before every forward);
// otherwise, or without buffers, it does nothing.
func (d *DDP) SyncBuffers() error {
	if !d.kw.BroadcastBuffersEnabled() {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.eng.broadcastBuffers(); err != nil {
		return fmt.Errorf("ddp: SyncBuffers: %w", err)
	}
	return nil
}

// NoSync runs fn with gradient synchronisation turned off (torch's
// no_sync()): SyncGradients calls inside fn return at once and the gradients
// accumulate locally; the first SyncGradients after NoSync averages the
// accumulated gradients. fn's error is returned as is.
func (d *DDP) NoSync(fn func() error) error {
	d.mu.Lock()
	prev := d.noSync
	d.noSync = true
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.noSync = prev
		d.mu.Unlock()
	}()
	if fn == nil {
		return nil
	}
	return fn()
}
