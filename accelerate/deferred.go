package accelerate

import (
	"errors"
	"fmt"
	"sync"

	"github.com/goaccel/goaccel/accelerate/ddp"
	"github.com/goaccel/goaccel/accelerate/safetensors"
)

// DeferredModel is a model prepared before it has parameters: a GoMLX
// model creates its variables when its first graph is built, after Prepare
// would have wrapped it. PrepareDeferred tracks it at once, in the order of
// preparation (so SaveState and LoadState number it as Prepare would), and
// Build wraps it once its parameters exist. A checkpoint LoadState reads
// before then is kept and loaded by Build.
type DeferredModel struct {
	a     *Accelerator
	model any // ddp.Model or ddp.Model32

	mu      sync.Mutex
	ddp     *ddp.DDP
	pending map[string]safetensors.Tensor // read by LoadState before Build
}

// trackedModel is a prepared model as SaveState and LoadState see it.
type trackedModel struct {
	d     *ddp.DDP
	later *DeferredModel
}

// wrapped is the model's DDP (nil while a deferred model is not built).
func (m trackedModel) wrapped() *ddp.DDP {
	if m.later != nil {
		return m.later.DDP()
	}
	return m.d
}

// PrepareDeferred tracks model, which implements ddp.Model or ddp.Model32
// but has no parameters yet, for SaveState and LoadState; call Build on
// every process once it has them.
func (a *Accelerator) PrepareDeferred(model any) (*DeferredModel, error) {
	if !ddp.IsModel(model) {
		return nil, fmt.Errorf("accelerate: PrepareDeferred: %T is not a model: it needs Parameters()/Gradients() [][]float64 (ddp.Model) or Parameters32()/Gradients32() [][]float32 (ddp.Model32)", model)
	}
	d := &DeferredModel{a: a, model: model}
	a.train.mu.Lock()
	a.train.models = append(a.train.models, trackedModel{later: d})
	a.train.mu.Unlock()
	return d, nil
}

// Build wraps the model as PrepareModel does (process 0's parameters are
// broadcast: a collective), then loads the checkpoint LoadState read
// meanwhile, if any, checking its names and shapes. Calling it again
// returns the same DDP.
func (d *DeferredModel) Build() (*ddp.DDP, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ddp != nil {
		return d.ddp, nil
	}
	w, err := d.a.wrapModel(d.model)
	if err != nil {
		return nil, err
	}
	if d.pending != nil {
		v, err := viewOf(w)
		if err != nil {
			return nil, err
		}
		by, err := v.check(mapTensors(d.pending), true)
		if err != nil {
			return nil, fmt.Errorf("accelerate: the checkpoint loaded before the model was built does not fit it: %w", err)
		}
		if err := v.load(by); err != nil {
			return nil, fmt.Errorf("accelerate: loading the checkpoint into the model: %w", err)
		}
		d.pending = nil
	}
	d.ddp = w
	return w, nil
}

// DDP returns the wrapped model, nil before Build.
func (d *DeferredModel) DDP() *ddp.DDP {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ddp
}

// loadLater keeps a checkpoint's tensors for Build.
func (d *DeferredModel) loadLater(ts map[string]safetensors.Tensor) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pending = ts
}

func mapTensors(by map[string]safetensors.Tensor) []safetensors.Tensor {
	out := make([]safetensors.Tensor, 0, len(by))
	for _, t := range by {
		out = append(out, t)
	}
	return out
}

// errNotBuilt is SaveState's complaint about a deferred model without
// parameters.
var errNotBuilt = errors.New("it has no parameters yet (a GoMLX model creates its variables in its first training step): save after a step")
