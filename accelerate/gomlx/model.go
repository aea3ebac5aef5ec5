package gomlx

import (
	"fmt"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/sirupsen/logrus"
	"github.com/x448/float16"

	"github.com/goaccel/goaccel/accelerate/amp"
)

// modelView is the Trainer's model as Accelerate sees it (ddp.Model32,
// ddp.Shaped, accelerate.Named, accelerate.Reloadable): the float32
// masters, on the host. The host copies are refreshed from the masters
// when the optimizer has changed them since (stale), and what is written
// into them (process 0's broadcast, a checkpoint) goes to the masters and
// the model's variables in ParametersLoaded.
type modelView struct {
	t     *Trainer
	stale bool // the masters changed since the host copies were made
}

// Parameters32 implements ddp.Model32.
func (m *modelView) Parameters32() [][]float32 {
	t := m.t
	if err := t.gatherHost(); err != nil {
		// A broken group: its next collective fails and ends the launch.
		logrus.WithError(err).Error("gomlx: gathering the parameters")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if m.stale {
		for _, p := range t.params {
			if v, err := p.master.Value(); err == nil {
				_ = toHost(v, p.host)
			}
		}
		m.stale = false
	}
	out := make([][]float32, len(t.params))
	for i, p := range t.params {
		out[i] = p.host
	}
	return out
}

// Gradients32 implements ddp.Model32: the gradients on the host.
func (m *modelView) Gradients32() [][]float32 {
	t := m.t
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([][]float32, len(t.params))
	for i, p := range t.params {
		out[i] = p.hostGrad
	}
	return out
}

// Shapes implements ddp.Shaped.
func (m *modelView) Shapes() [][]int {
	t := m.t
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([][]int, len(t.params))
	for i, p := range t.params {
		out[i] = p.shape
	}
	return out
}

// ParameterNames implements accelerate.Named: scope and name, as GoMLX
// names variables ("/model/conv0/conv/weights").
func (m *modelView) ParameterNames() []string {
	t := m.t
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, len(t.params))
	for i, p := range t.params {
		out[i] = p.name
	}
	return out
}

// ParametersLoaded implements accelerate.Reloadable: the host copies
// become the masters' values and, converted to the compute dtype, the
// model's variables'.
func (m *modelView) ParametersLoaded() error {
	t := m.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.shard != nil { // the masters of this process's share only
		if err := t.shard.loadShards(); err != nil {
			return err
		}
		if t.releases() && t.shard.released {
			for _, p := range t.params {
				p.host = nil // FULL_SHARD: the next step gathers the new shares
			}
			m.stale = false
			return nil
		}
	}
	for _, p := range t.params {
		if p.master != nil {
			if err := p.master.SetValue(tensors.FromFlatDataAndDimensions(append([]float32(nil), p.host...), p.shape...)); err != nil {
				return fmt.Errorf("gomlx: setting %s: %w", p.name, err)
			}
		}
		if err := p.v.SetValue(fromHost(p.host, p.v.DType(), p.shape)); err != nil {
			return fmt.Errorf("gomlx: setting %s: %w", p.name, err)
		}
	}
	m.stale = false
	return nil
}

// toHost copies a float32, bfloat16 or float16 tensor into dst as float32.
func toHost(t *tensors.Tensor, dst []float32) error {
	if t.Size() != len(dst) {
		return fmt.Errorf("a tensor of shape %s into %d values", t.Shape(), len(dst))
	}
	switch t.DType() {
	case dtypes.Float32:
		return tensors.ConstFlatData(t, func(flat []float32) { copy(dst, flat) })
	case dtypes.BFloat16:
		return tensors.ConstFlatData(t, func(flat []bfloat16.BFloat16) {
			for i, x := range flat {
				dst[i] = x.Float32()
			}
		})
	case dtypes.Float16:
		return tensors.ConstFlatData(t, func(flat []float16.Float16) {
			for i, x := range flat {
				dst[i] = x.Float32()
			}
		})
	}
	return fmt.Errorf("a %s tensor is not a float32, bfloat16 or float16 one", t.DType())
}

// fromHost makes a tensor of dtype from float32 values.
func fromHost(src []float32, dtype dtypes.DType, dims []int) *tensors.Tensor {
	switch dtype {
	case dtypes.BFloat16:
		// Rounded to nearest even, as torch's .to(bfloat16) and XLA's
		// convert do: GoMLX's bfloat16.FromFloat32 truncates (toward zero).
		out := make([]bfloat16.BFloat16, len(src))
		for i, x := range src {
			out[i] = bfloat16.FromBits(amp.Float32ToBFloat16(x))
		}
		return tensors.FromFlatDataAndDimensions(out, dims...)
	case dtypes.Float16:
		out := make([]float16.Float16, len(src))
		for i, x := range src {
			out[i] = float16.Fromfloat32(x)
		}
		return tensors.FromFlatDataAndDimensions(out, dims...)
	}
	return tensors.FromFlatDataAndDimensions(append([]float32(nil), src...), dims...)
}
