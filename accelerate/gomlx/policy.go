package gomlx

import (
	"context"
	"errors"
	"fmt"

	"github.com/gomlx/gomlx/pkg/core/dtypes"

	"github.com/goaccel/goaccel/accelerate/amp"
	"github.com/goaccel/goaccel/accelerate/fsdp"
	"github.com/goaccel/goaccel/accelerate/pg"
)

// FSDP's mixed-precision policy (fsdp.MixedPrecisionPolicy, torch's
// MixedPrecision): ParamDType is the dtype the model computes in, as the
// Accelerator's mixed precision sets it (its parameters gathered in it);
// ReduceDType the dtype the sharded gradients are reduce-scattered (and,
// with the hybrid strategies, all-reduced across nodes) in: 16-bit values
// on the wire, half of float32's traffic, each partial sum rounded to 16
// bits (pg's 16-bit collectives). The float32 masters and the optimizer's
// state are unchanged.

// applyPolicy sets the compute dtype and the reduction dtype from the
// plugin's policy, refusing what contradicts the Accelerator.
func (t *Trainer) applyPolicy(strategy fsdp.ShardingStrategy) error {
	t.reduce = dtypes.Float32
	p := t.acc.FSDPPlugin()
	if p == nil || p.MixedPrecisionPolicy == nil {
		return nil
	}
	mp := p.MixedPrecisionPolicy
	if mp.ParamDType != "" {
		d := dtypeOf(mp.ParamDType)
		switch {
		case d == t.compute:
		case t.compute != dtypes.Float32:
			return fmt.Errorf("gomlx: NewTrainer: FSDP's mixed-precision policy computes in %s, the Accelerator's mixed precision %q in %s: "+
				"set one of them, or both alike", d, t.acc.MixedPrecision(), t.compute)
		case d == dtypes.Float16:
			return errors.New("gomlx: NewTrainer: FSDP's mixed-precision policy computes in float16, which needs fp16's loss scaler: " +
				"use the Accelerator's mixed precision \"fp16\"")
		case !backendHas(t.backend, d):
			return fmt.Errorf("gomlx: NewTrainer: FSDP's mixed-precision policy computes in %s, which the %s backend cannot", d, t.backend.Name())
		default:
			t.compute = d
		}
	}
	reduce := mp.ReduceDType
	if reduce == "" {
		reduce = mp.ParamDType // torch's default: the reduction in the compute dtype
	}
	if reduce != "" {
		t.reduce = dtypeOf(reduce)
	}
	if t.reduce != dtypes.Float32 && strategy == 0 && t.acc.NumProcesses() > 1 {
		return fmt.Errorf("gomlx: NewTrainer: FSDP's mixed-precision policy reduces the gradients in %s with a sharding strategy; "+
			"under NO_SHARD the gradients are DDP's: set DistributedDataParallelKwargs' comm_hook (\"bf16\" or \"fp16\") instead", t.reduce)
	}
	return nil
}

func dtypeOf(name string) dtypes.DType {
	switch name {
	case "bfloat16":
		return dtypes.BFloat16
	case "float16":
		return dtypes.Float16
	}
	return dtypes.Float32
}

// wire16 converts float32 values to 16-bit ones of dtype and back.
type wire16 struct {
	to   func(float32) uint16
	from func(uint16) float32
}

func wireOf(dtype dtypes.DType) (wire16, bool) {
	switch dtype {
	case dtypes.BFloat16:
		return wire16{amp.Float32ToBFloat16, amp.BFloat16ToFloat32}, true
	case dtypes.Float16:
		return wire16{amp.Float32ToFloat16, amp.Float16ToFloat32}, true
	}
	return wire16{}, false
}

// reduceScatter16 is the synchronising step's reduction in a 16-bit dtype:
// flat's gradients rounded to it, reduce-scattered (mean), all-reduced
// across the replicas with the hybrid strategies, into l.grad as float32.
func (l *shardLayout) reduceScatter16(ctx context.Context, dtype dtypes.DType) error {
	w, _ := wireOf(dtype)
	in := make([]uint16, len(l.flat))
	for i, x := range l.flat {
		in[i] = w.to(x)
	}
	out := make([]uint16, l.share)
	rs, ar := l.group.ReduceScatterBFloat16, (*pg.Group).AllReduceBFloat16
	if dtype == dtypes.Float16 {
		rs, ar = l.group.ReduceScatterFloat16, (*pg.Group).AllReduceFloat16
	}
	if err := rs(ctx, out, in, pg.Mean); err != nil {
		return err
	}
	if l.replicas != nil {
		if err := ar(l.replicas, ctx, out, pg.Mean); err != nil {
			return err
		}
	}
	for i, x := range out {
		l.grad[i] = w.from(x)
	}
	return nil
}

// wholeFrom all-gathers every process's share of the parameters (own is
// this process's) into a new buffer of the whole flat vector, rounded to
// dtype: a 16-bit dtype travels as 16 bits, half of float32's traffic.
func (l *shardLayout) wholeFrom(ctx context.Context, own []float32, dtype dtypes.DType) ([]float32, error) {
	out := make([]float32, l.world*l.share)
	var err error
	if _, half := wireOf(dtype); half {
		err = l.allGather16(ctx, out, own, dtype)
	} else {
		err = l.group.AllGatherFloat32(ctx, out, own)
	}
	if err != nil {
		return nil, fmt.Errorf("gomlx: FSDP: all-gathering the parameters: %w", err)
	}
	return out, nil
}

// allGather16 all-gathers the shares in a 16-bit dtype into out (as
// float32 values of that dtype).
func (l *shardLayout) allGather16(ctx context.Context, out, own []float32, dtype dtypes.DType) error {
	w, _ := wireOf(dtype)
	mine := make([]uint16, len(own))
	for i, x := range own {
		mine[i] = w.to(x)
	}
	all := make([]uint16, len(out))
	gather := l.group.AllGatherBFloat16
	if dtype == dtypes.Float16 {
		gather = l.group.AllGatherFloat16
	}
	if err := gather(ctx, all, mine); err != nil {
		return err
	}
	for i, x := range all {
		out[i] = w.from(x)
	}
	return nil
}
