package gomlx

import (
	"fmt"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/train"
)

// Eval evaluates the model on ds (train.Trainer.Eval's metrics: the mean
// loss, then the evaluation metrics). With several processes, pass each
// its shard (ShardDataset): every process evaluates its part and the
// metrics are averaged over the processes, which is the mean over the
// whole dataset when every process evaluates as many examples (ShardDataset
// makes it so). Every process gets the same values.
func (t *Trainer) Eval(ds train.Dataset) ([]*tensors.Tensor, error) {
	var m []*tensors.Tensor
	err := catch(func() { m = must(t.trainer.Eval(ds)) })
	if err != nil {
		return nil, t.stepError(fmt.Errorf("gomlx: Eval: %w", err))
	}
	if t.acc.NumProcesses() <= 1 {
		return m, nil
	}
	vals := make([]float64, len(m))
	for i, x := range m {
		if x.Shape().Size() != 1 {
			return nil, fmt.Errorf("gomlx: Eval: metric %d has shape %s: only scalar metrics can be averaged over processes", i, x.Shape())
		}
		vals[i] = shapes.ConvertTo[float64](x.Value())
	}
	mean, err := t.acc.Reduce(vals, "mean")
	if err != nil {
		return nil, fmt.Errorf("gomlx: Eval: %w", err)
	}
	out := make([]*tensors.Tensor, len(m))
	for i, x := range m {
		out[i] = scalarLike(x.DType(), mean[i])
		_ = x.FinalizeAll()
	}
	return out, nil
}

// EvalValues is Eval with the metrics as float64, by the metrics' short
// names ("#loss", "#acc", ...).
func (t *Trainer) EvalValues(ds train.Dataset) (map[string]float64, error) {
	m, err := t.Eval(ds)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for i, mi := range t.trainer.EvalMetrics() {
		if i < len(m) {
			out[mi.ShortName()] = shapes.ConvertTo[float64](m[i].Value())
		}
	}
	return out, nil
}

// scalarLike makes a scalar tensor of dtype holding v.
func scalarLike(dtype dtypes.DType, v float64) *tensors.Tensor {
	switch dtype {
	case dtypes.Float32:
		return tensors.FromScalar(float32(v))
	case dtypes.Float64:
		return tensors.FromScalar(v)
	}
	return tensors.FromScalar(v)
}
