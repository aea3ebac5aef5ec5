package accelerate

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/goaccel/goaccel/accelerate/ddp"
	"github.com/goaccel/goaccel/accelerate/kwargs"
	"github.com/goaccel/goaccel/accelerate/pg"
)

// groupReducer adapts the Accelerator's process group to ddp.Reducer (and
// ddp.Reducer16: 16-bit ring all-reduces for the fp16/bf16 comm hooks).
type groupReducer struct {
	g   *pg.Group
	ctx context.Context
}

var (
	_ ddp.Reducer   = groupReducer{}
	_ ddp.Reducer16 = groupReducer{}
	_ ddp.Reducer   = localReducer{}
)

func (r groupReducer) Rank() int      { return r.g.Rank() }
func (r groupReducer) WorldSize() int { return r.g.Size() }

func (r groupReducer) AllReduceFloat64(buf []float64, op string) error {
	o, err := pg.ParseReduceOp(op)
	if err != nil {
		return err
	}
	return r.g.AllReduceFloat64(r.ctx, buf, o)
}

func (r groupReducer) AllReduceFloat32(buf []float32, op string) error {
	o, err := pg.ParseReduceOp(op)
	if err != nil {
		return err
	}
	return r.g.AllReduceFloat32(r.ctx, buf, o)
}

func (r groupReducer) BroadcastFloat64(buf []float64, root int) error {
	return r.g.BroadcastFloat64(r.ctx, buf, root)
}

func (r groupReducer) BroadcastFloat32(buf []float32, root int) error {
	return r.g.BroadcastFloat32(r.ctx, buf, root)
}

func (r groupReducer) AllGatherBytes(data []byte) ([][]byte, error) {
	return r.g.AllGather(r.ctx, data)
}

func (r groupReducer) AllReduce16(buf []uint16, kind string) error {
	switch kind {
	case string(kwargs.CommHookFP16):
		return r.g.AllReduceFloat16(r.ctx, buf, pg.Sum)
	case string(kwargs.CommHookBF16):
		return r.g.AllReduceBFloat16(r.ctx, buf, pg.Sum)
	}
	return fmt.Errorf("accelerate: no 16-bit all-reduce for %q", kind)
}

// localReducer is the reducer of a single process: every collective is the
// identity (no communication).
type localReducer struct{}

func (localReducer) Rank() int                                { return 0 }
func (localReducer) WorldSize() int                           { return 1 }
func (localReducer) AllReduceFloat64([]float64, string) error { return nil }
func (localReducer) AllReduceFloat32([]float32, string) error { return nil }
func (localReducer) BroadcastFloat64([]float64, int) error    { return nil }
func (localReducer) BroadcastFloat32([]float32, int) error    { return nil }
func (localReducer) AllGatherBytes(data []byte) ([][]byte, error) {
	return [][]byte{data}, nil
}

// Reducer returns the collectives ddp.Wrap needs, over the Accelerator's
// process group (a communication-free reducer of world size 1 in a single
// process), for wrapping models by hand.
func (a *Accelerator) Reducer() (ddp.Reducer, error) {
	g, err := a.st.groupFor("Reducer")
	if err != nil {
		return nil, err
	}
	if g == nil {
		return localReducer{}, nil
	}
	return groupReducer{g: g, ctx: a.st.ctx}, nil
}

// Shardable is implemented by data sources that Prepare shards across the
// processes (Accelerate's prepared DataLoader): Shard returns the part
// process processIndex of numProcesses handles.
type Shardable interface {
	Shard(numProcesses, processIndex int) (any, error)
}

// Prepare is Accelerate's prepare: it returns objs, in order, ready for
// distributed training.
//
//   - A model (ddp.Model: Parameters()/Gradients() [][]float64, or
//     ddp.Model32 with float32) is wrapped in a *ddp.DDP configured by
//     DistributedDataParallelKwargs (bucket_cap_mb, comm_hook, ...): rank 0's
//     parameters are broadcast, and SyncGradients (or the DDP's own) averages
//     the gradients across processes. In a single process the wrapper
//     communicates nothing and registers no comm hook (Accelerate does not
//     wrap the model in DDP there), so the gradients are left untouched.
//     A *ddp.DDP passes through (no double wrapping).
//   - A Shardable (a DataLoader-like type) is replaced by its shard for this
//     process.
//   - Anything else (optimizers, schedulers, slices) is returned unchanged,
//     as Accelerate returns objects it does not know. To shard a slice, use
//     PrepareData, SplitBetweenProcesses or SplitIndices.
//
// Wrapping a model is a collective: every process must call Prepare with
// the same models in the same order.
func (a *Accelerator) Prepare(objs ...any) ([]any, error) {
	out := make([]any, len(objs))
	for i, o := range objs {
		switch {
		case o == nil:
		case isDDP(o):
			a.track(o)
			out[i] = o
			continue
		case ddp.IsModel(o):
			d, err := a.PrepareModel(o)
			if err != nil {
				return nil, fmt.Errorf("accelerate: Prepare: argument %d: %w", i, err)
			}
			out[i] = d
			continue
		default:
			if isOptimizer(o) {
				a.track(o)
			}
			if s, ok := o.(Shardable); ok {
				v, err := s.Shard(a.NumProcesses(), a.ProcessIndex())
				if err != nil {
					return nil, fmt.Errorf("accelerate: Prepare: argument %d (%T): sharding: %w", i, o, err)
				}
				out[i] = v
				continue
			}
		}
		out[i] = o
	}
	return out, nil
}

func isDDP(o any) bool {
	_, ok := o.(*ddp.DDP)
	return ok
}

// PrepareModel wraps a ddp.Model or ddp.Model32 as Prepare does, typed for
// notebook cells.
func (a *Accelerator) PrepareModel(model any) (*ddp.DDP, error) {
	if d, ok := model.(*ddp.DDP); ok {
		a.track(d)
		return d, nil
	}
	d, err := a.wrapModel(model)
	if err != nil {
		return nil, err
	}
	a.track(d)
	return d, nil
}

// wrapModel wraps model over the process group, configured by the
// DistributedDataParallelKwargs handler (no comm hook in one process).
func (a *Accelerator) wrapModel(model any) (*ddp.DDP, error) {
	if !ddp.IsModel(model) {
		return nil, fmt.Errorf("accelerate: PrepareModel: %T is not a model: it needs Parameters()/Gradients() [][]float64 (ddp.Model) or Parameters32()/Gradients32() [][]float32 (ddp.Model32)", model)
	}
	r, err := a.Reducer()
	if err != nil {
		return nil, err
	}
	kw := a.handlers.DDP()
	if r.WorldSize() == 1 {
		kw.CommHook, kw.CommWrapper = kwargs.CommHookNo, kwargs.CommHookNo
	}
	d, err := ddp.WrapAny(model, r, kw)
	if err != nil {
		return nil, fmt.Errorf("accelerate: %w", err)
	}
	return d, nil
}

// optimizer is what Prepare recognises as an optimizer (nn.Optimizer's
// methods): SaveState saves its state.
type steppable interface {
	Step()
	ZeroGrad()
}

func isOptimizer(o any) bool {
	if _, ok := o.(TensorState); ok {
		return true
	}
	_, ok := o.(steppable)
	return ok
}

// track records a prepared model or optimizer for SaveState and LoadState,
// once, in the order prepared.
func (a *Accelerator) track(o any) {
	a.train.mu.Lock()
	defer a.train.mu.Unlock()
	if d, ok := o.(*ddp.DDP); ok {
		for _, m := range a.train.models {
			if m.wrapped() == d {
				return
			}
		}
		a.train.models = append(a.train.models, trackedModel{d: d})
		return
	}
	if reflect.TypeOf(o).Comparable() {
		for _, x := range a.train.optimizers {
			if reflect.TypeOf(x) == reflect.TypeOf(o) && x == o {
				return
			}
		}
	}
	a.train.optimizers = append(a.train.optimizers, o)
}

// SyncGradients averages a prepared model's gradients across processes
// (call it on every process after each backward pass, as torch's DDP does
// during backward): model is the *ddp.DDP Prepare returned. Inside
// (*ddp.DDP).NoSync it does nothing, for gradient accumulation.
func (a *Accelerator) SyncGradients(model any) error {
	d, ok := model.(*ddp.DDP)
	if !ok || d == nil {
		return fmt.Errorf("accelerate: SyncGradients: %T is not a prepared model (pass what Prepare or PrepareModel returned)", model)
	}
	return d.SyncGradients()
}

// UnwrapModel returns the model a *ddp.DDP wraps (Accelerate's
// unwrap_model); anything else is returned as is.
func (a *Accelerator) UnwrapModel(model any) any {
	if d, ok := model.(*ddp.DDP); ok && d != nil {
		return d.Module()
	}
	return model
}

// PrepareData returns this process's share of data: a []float64,
// []float32, []int, []string or []any is split contiguously between the
// processes (see SplitIndices for pad: with pad every process gets the same
// number of items, as Accelerate's even_batches), a Shardable is asked for
// its shard; other types are an error.
func (a *Accelerator) PrepareData(data any, pad bool) (any, error) {
	switch d := data.(type) {
	case []float64:
		return Split(a, d, pad), nil
	case []float32:
		return Split(a, d, pad), nil
	case []int:
		return Split(a, d, pad), nil
	case []string:
		return Split(a, d, pad), nil
	case []any:
		return Split(a, d, pad), nil
	case Shardable:
		v, err := d.Shard(a.NumProcesses(), a.ProcessIndex())
		if err != nil {
			return nil, fmt.Errorf("accelerate: PrepareData: sharding %T: %w", data, err)
		}
		return v, nil
	case nil:
		return nil, errors.New("accelerate: PrepareData: nil data")
	}
	return nil, fmt.Errorf("accelerate: PrepareData: cannot shard %T: pass a slice of float64, float32, int, string or any, or a Shardable (or use SplitIndices)", data)
}
