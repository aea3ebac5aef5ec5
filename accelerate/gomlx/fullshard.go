package gomlx

import (
	"errors"
	"fmt"
	"time"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// FSDP's FULL_SHARD (ZeRO-3) for a GoMLX model. The whole model is one
// FSDP unit, as Accelerate wraps a model with FSDP_AUTO_WRAP_POLICY
// NO_WRAP: a GoMLX model trains as one XLA graph that reads every
// parameter, so the unit cannot be smaller than the graph. On top of
// SHARD_GRAD_OP (shard.go), the parameters too live as shares between
// steps: after the update each process keeps only its share (own, as
// float32) and drops the model's variables, their gradients and the host
// buffers of the whole model; the next step (TrainStep, a loop's next
// step, Eval) all-gathers the shares into the variables first. The
// traffic is DDP's, the all-gather having moved from after the update to
// before the next step; what each process holds between steps falls as
// 1/N, while a step holds the whole parameters and gradients as
// SHARD_GRAD_OP does.

// releases reports whether the parameters live as shares between steps.
func (t *Trainer) releases() bool { return t.fullShard && t.shard != nil }

// gather all-gathers the parameters' shares into the model's variables (in
// the compute dtype) when they were released, and makes the gathered
// buffer this step's gradient buffer. A collective under FULL_SHARD; a
// no-op otherwise.
func (t *Trainer) gather() error {
	t.mu.Lock()
	l := t.shard
	if !t.releases() || !l.released {
		t.mu.Unlock()
		return nil
	}
	own := l.own
	t.mu.Unlock()
	start := time.Now()
	// In the variables' dtype: half float32's traffic in 16 bits, the same values.
	flat, err := l.wholeFrom(t.acc.Context(), own, t.compute)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	defer func() { t.stats.Gather += time.Since(start) }()
	at := 0
	for _, p := range t.params {
		n := p.size()
		if err := p.v.SetValue(fromHost(flat[at:at+n], p.v.DType(), p.shape)); err != nil {
			return fmt.Errorf("gomlx: setting %s: %w", p.name, err)
		}
		// The training graph donates its gradient variables' buffers.
		if err := p.grad.SetValue(tensors.FromShape(shapes.Make(dtypes.Float32, p.shape...))); err != nil {
			return fmt.Errorf("gomlx: the gradient of %s: %w", p.name, err)
		}
		p.hostGrad = flat[at : at+n : at+n]
		at += n
	}
	clear(flat) // now the gradients' buffer, which accumulation adds to
	l.flat, l.released = flat, false
	t.stats.Gathers++
	return nil
}

// release drops what a process holds of the whole model between steps
// under FULL_SHARD: the model's variables, their gradients and the host
// buffers. It keeps them while gradients are being accumulated.
func (t *Trainer) release() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.shard
	if !t.releases() || l.released || l.accumulating {
		return nil
	}
	for _, p := range t.params {
		if err := p.v.Reset(); err != nil {
			return fmt.Errorf("gomlx: releasing %s: %w", p.name, err)
		}
		if err := p.grad.Reset(); err != nil {
			return fmt.Errorf("gomlx: releasing the gradient of %s: %w", p.name, err)
		}
		p.host, p.hostGrad = nil, nil
	}
	l.flat, l.released = nil, true
	return nil
}

// gatherHost makes the host copies of the whole parameters (Parameters32:
// saving, the divergence check, MasterValues) from the shares when they
// were released: a collective under FULL_SHARD, as torch's FSDP gathers a
// full state dict. They are dropped again by the next release.
func (t *Trainer) gatherHost() error {
	t.mu.Lock()
	l := t.shard
	if !t.releases() || len(t.params) == 0 || t.params[0].host != nil {
		t.mu.Unlock()
		return nil
	}
	own := l.own
	t.mu.Unlock()
	flat, err := l.wholeFrom(t.acc.Context(), own, dtypes.Float32)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	at := 0
	for _, p := range t.params {
		n := p.size()
		p.host = flat[at : at+n : at+n]
		at += n
	}
	return nil
}

// GatherParameters gives the model's variables their whole values, for
// Predict and Generate, when FSDP's FULL_SHARD keeps them as shares
// between steps (torch's FSDP.summon_full_params): every process must
// call it; ReleaseParameters drops them again. Without FULL_SHARD it does
// nothing.
func (t *Trainer) GatherParameters() error { return t.gather() }

// ReleaseParameters drops the whole parameters GatherParameters gathered
// (FULL_SHARD); every process must call it. Without FULL_SHARD it does
// nothing.
func (t *Trainer) ReleaseParameters() error { return t.release() }

// ParametersReleased reports whether the model's variables hold no values
// now because FSDP's FULL_SHARD keeps the parameters as shares between
// steps.
func (t *Trainer) ParametersReleased() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.releases() && t.shard.released
}

// errReleased is what Predict says when the parameters are shares.
var errReleased = errors.New("with FSDP's FULL_SHARD the parameters live as shares between steps: call tr.GatherParameters() " +
	"on every process first (torch's summon_full_params), and tr.ReleaseParameters() after")

// size is the number of values of p.
func (p *param) size() int {
	n := 1
	for _, d := range p.shape {
		n *= d
	}
	return n
}
