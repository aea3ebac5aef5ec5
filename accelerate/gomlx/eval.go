package gomlx

import (
	"errors"
	"fmt"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // GoMLX's graph API reads best dot-imported
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/train"
)

// Eval evaluates the model on ds (train.Trainer.Eval's metrics: the mean
// loss, then the evaluation metrics). With several processes, pass each
// its shard (ShardDataset): every process evaluates its part and the
// metrics are averaged over the processes, which is the mean over the
// whole dataset when every process evaluates as many examples (ShardDataset
// makes it so). Every process gets the same values.
func (t *Trainer) Eval(ds train.Dataset) ([]*tensors.Tensor, error) {
	if t.ParametersReleased() { // FULL_SHARD: gathered for the evaluation only
		if err := t.gather(); err != nil {
			return nil, fmt.Errorf("gomlx: Eval: %w", err)
		}
		defer func() { _ = t.release() }()
	}
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

// Predict runs the model (not training: dropout off, batch-norm averages
// used) on inputs and returns its predictions, in float32. It is the
// inference a process does on its part of an evaluation set
// (Accelerator.SplitBetweenProcesses), before Accelerator.GatherForMetrics
// joins the parts. A model not built yet (no step or evaluation ran) is
// built by the first Predict, with the values a LoadState before it read;
// building is a collective with several processes (process 0's values are
// broadcast), so then every process must make that first call.
func (t *Trainer) Predict(inputs ...*tensors.Tensor) ([]*tensors.Tensor, error) {
	if len(inputs) == 0 {
		return nil, errors.New("gomlx: Predict: no inputs")
	}
	if t.ParametersReleased() {
		return nil, fmt.Errorf("gomlx: Predict: %w", errReleased)
	}
	exec, err := t.predictExec()
	if err != nil {
		return nil, err
	}
	args := make([]any, len(inputs))
	for i, x := range inputs {
		args[i] = x
	}
	var out []*tensors.Tensor
	if err := catch(func() { out = must(exec.Exec(args...)) }); err != nil {
		return nil, t.stepError(fmt.Errorf("gomlx: Predict: %w", err))
	}
	return out, nil
}

// predictExec builds the inference graph once (GoMLX builds one graph per
// input shape under it).
func (t *Trainer) predictExec() (*context.Exec, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.predict != nil {
		return t.predict, nil
	}
	model := t.modelFn
	vars := t.ctx.Reuse()
	if !t.built {
		vars = t.ctx.Checked(false) // this graph creates the model's variables
	}
	exec, err := context.NewExec(t.backend, vars, func(ctx *context.Context, inputs []*Node) []*Node {
		ctx.SetTraining(inputs[0].Graph(), false)
		return model(ctx, nil, inputs)
	})
	if err != nil {
		return nil, fmt.Errorf("gomlx: Predict: %w", err)
	}
	t.predict = exec.WithName("goaccel predict")
	return t.predict, nil
}
