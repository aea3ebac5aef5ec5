package nn

import (
	"bytes"
	"encoding"
	"fmt"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/accelerate/safetensors"
)

// The optimizers save and restore their state (torch's state_dict and
// load_state_dict) as safetensors bytes: the per-parameter tensors
// (momentum_buffer.i for SGD; exp_avg.i and exp_avg_sq.i for Adam) and, in
// the metadata, the type, the step and the hyperparameters, written with
// enough digits to come back bit for bit. Accelerator.SaveState and
// LoadState use them through these methods.
var (
	_ encoding.BinaryMarshaler   = (*SGD)(nil)
	_ encoding.BinaryUnmarshaler = (*SGD)(nil)
	_ encoding.BinaryMarshaler   = (*Adam)(nil)
	_ encoding.BinaryUnmarshaler = (*Adam)(nil)
)

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func encodeState(kind string, meta map[string]string, groups map[string][][]float64, order []string) ([]byte, error) {
	meta["type"] = kind
	var ts []safetensors.Tensor
	for _, g := range order {
		for i, v := range groups[g] {
			ts = append(ts, safetensors.FromFloat64s(g+"."+strconv.Itoa(i), []int{len(v)}, v))
		}
	}
	var buf bytes.Buffer
	size := 1 << 12
	for _, t := range ts {
		size += len(t.Data) + len(t.Name) + 64 // data and its header entry
	}
	buf.Grow(size)
	if err := safetensors.Encode(&buf, ts, meta); err != nil {
		return nil, fmt.Errorf("nn: %s state: %w", kind, err)
	}
	return buf.Bytes(), nil
}

// decodeState parses state saved by encodeState for kind and checks every
// tensor group against the model's parameter sizes.
func decodeState(kind string, b []byte, sizes []int, groups ...string) (map[string]string, map[string][][]float64, error) {
	f, err := safetensors.Decode(b)
	if err != nil {
		return nil, nil, fmt.Errorf("nn: %s state: %w", kind, err)
	}
	if got := f.Metadata["type"]; got != kind {
		return nil, nil, fmt.Errorf("nn: the state is of a %s optimizer, not %s", orUnknown(got), kind)
	}
	out := map[string][][]float64{}
	n := 0
	for _, g := range groups {
		count := 0
		for _, t := range f.Tensors {
			if strings.HasPrefix(t.Name, g+".") {
				count++
			}
		}
		if count == 0 {
			continue // no step taken yet: no buffers
		}
		if count != len(sizes) {
			return nil, nil, fmt.Errorf("nn: %s state was saved for a model with %d parameter tensors, this one has %d", kind, count, len(sizes))
		}
		vs := make([][]float64, len(sizes))
		for i, size := range sizes {
			t, ok := f.Tensor(g + "." + strconv.Itoa(i))
			if !ok {
				return nil, nil, fmt.Errorf("nn: %s state has no %s.%d", kind, g, i)
			}
			if t.Elements() != size {
				return nil, nil, fmt.Errorf("nn: %s state: %s.%d has %d elements, this model's parameter %d has %d", kind, g, i, t.Elements(), i, size)
			}
			vs[i] = make([]float64, size)
			if err := t.Float64s(vs[i]); err != nil {
				return nil, nil, fmt.Errorf("nn: %s state: %w", kind, err)
			}
			n++
		}
		out[g] = vs
	}
	if n != len(f.Tensors) {
		return nil, nil, fmt.Errorf("nn: %s state holds %d tensors, of which %d are %s's", kind, len(f.Tensors), n, kind)
	}
	return f.Metadata, out, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func sizesOf(ps [][]float64) []int {
	s := make([]int, len(ps))
	for i, p := range ps {
		s[i] = len(p)
	}
	return s
}

func parseFloats(kind string, meta map[string]string, dst map[string]*float64) error {
	for k, p := range dst {
		v, err := strconv.ParseFloat(meta[k], 64)
		if err != nil {
			return fmt.Errorf("nn: %s state: bad %s %q", kind, k, meta[k])
		}
		*p = v
	}
	return nil
}

// MarshalBinary returns the optimizer's state: hyperparameters and momentum
// buffers.
func (o *SGD) MarshalBinary() ([]byte, error) {
	meta := map[string]string{"lr": ftoa(o.LR), "momentum": ftoa(o.Momentum), "weight_decay": ftoa(o.WeightDecay)}
	return encodeState("SGD", meta, map[string][][]float64{"momentum_buffer": o.buf}, []string{"momentum_buffer"})
}

// UnmarshalBinary restores state saved by MarshalBinary; it is an error
// naming the difference when the state was saved for a model of another
// shape or by another optimizer.
func (o *SGD) UnmarshalBinary(b []byte) error {
	meta, g, err := decodeState("SGD", b, sizesOf(o.model.Parameters()), "momentum_buffer")
	if err != nil {
		return err
	}
	var lr, mom, wd float64
	if err := parseFloats("SGD", meta, map[string]*float64{"lr": &lr, "momentum": &mom, "weight_decay": &wd}); err != nil {
		return err
	}
	o.LR, o.Momentum, o.WeightDecay = lr, mom, wd
	o.buf = g["momentum_buffer"]
	return nil
}

// MarshalBinary returns the optimizer's state: hyperparameters, the step
// count and the first and second moments.
func (o *Adam) MarshalBinary() ([]byte, error) {
	meta := map[string]string{"lr": ftoa(o.LR), "beta1": ftoa(o.Beta1), "beta2": ftoa(o.Beta2), "eps": ftoa(o.Eps),
		"weight_decay": ftoa(o.WeightDecay), "step": strconv.Itoa(o.t)}
	return encodeState("Adam", meta, map[string][][]float64{"exp_avg": o.m, "exp_avg_sq": o.v}, []string{"exp_avg", "exp_avg_sq"})
}

// UnmarshalBinary restores state saved by MarshalBinary (see SGD's).
func (o *Adam) UnmarshalBinary(b []byte) error {
	meta, g, err := decodeState("Adam", b, sizesOf(o.model.Parameters()), "exp_avg", "exp_avg_sq")
	if err != nil {
		return err
	}
	var lr, b1, b2, eps, wd float64
	if err := parseFloats("Adam", meta, map[string]*float64{"lr": &lr, "beta1": &b1, "beta2": &b2, "eps": &eps, "weight_decay": &wd}); err != nil {
		return err
	}
	t, err := strconv.Atoi(meta["step"])
	if err != nil || t < 0 {
		return fmt.Errorf("nn: Adam state: bad step %q", meta["step"])
	}
	if (g["exp_avg"] == nil) != (g["exp_avg_sq"] == nil) || (t > 0) != (g["exp_avg"] != nil) {
		return fmt.Errorf("nn: Adam state: step %d does not match the moments saved", t)
	}
	o.LR, o.Beta1, o.Beta2, o.Eps, o.WeightDecay, o.t = lr, b1, b2, eps, wd, t
	o.m, o.v = g["exp_avg"], g["exp_avg_sq"]
	return nil
}
