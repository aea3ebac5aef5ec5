package gomlx

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"sort"
	"strings"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"

	"github.com/goaccel/goaccel/accelerate/safetensors"
)

// modelPrefix names, in the optimizer state file, the model context's own
// non-trainable variables (batch-norm statistics, the random generator's
// state): they are not parameters, and the masters' context has variables
// of the same names.
const modelPrefix = "model:"

// optimizerState is what Accelerate's SaveState and LoadState see of the
// Trainer's optimizer (accelerate.TensorState): the masters' context's
// non-trainable variables (the optimizer's moments, the global steps) and
// the model context's own (prefixed "model:"), as tensors named by scope
// and name. The learning rate is left out: it comes from the optimizer's
// configuration (or a schedule) again.
type optimizerState struct{ t *Trainer }

// StateTensors implements accelerate.TensorState.
func (o *optimizerState) StateTensors() ([]safetensors.Tensor, error) {
	t := o.t
	if t.sharded {
		return t.shardedStateTensors()
	}
	t.mu.Lock()
	masters := t.masters
	t.mu.Unlock()
	if t.fused {
		// One context: the optimizer's variables under their own names,
		// the model's own prefixed, as the two-graph step saves them.
		out, err := variableTensors("", masters, func(v *context.Variable) bool {
			return v.Name() != optimizers.ParamLearningRate && t.isOptimizerState(v)
		})
		if err != nil {
			return nil, err
		}
		own, err := variableTensors(modelPrefix, t.ctx, func(v *context.Variable) bool {
			return ownModelVariable(v) && !t.isOptimizerState(v)
		})
		return append(out, own...), err
	}
	out, err := variableTensors("", masters, func(v *context.Variable) bool { return v.Name() != optimizers.ParamLearningRate })
	if err != nil {
		return nil, err
	}
	own, err := t.modelStateTensors()
	return append(out, own...), err
}

// CollectiveState implements accelerate.CollectiveTensorState: a sharded
// Trainer's state is gathered from every process.
func (o *optimizerState) CollectiveState() bool { return o.t.sharded && !o.t.shardedStateDict() }

// modelStateTensors are the model context's own non-trainable variables,
// prefixed.
func (t *Trainer) modelStateTensors() ([]safetensors.Tensor, error) {
	return variableTensors(modelPrefix, t.ctx, ownModelVariable)
}

// variableTensors are ctx's non-trainable variables that keep selects, as
// tensors named prefix + scope and name.
func variableTensors(prefix string, ctx *context.Context, keep func(v *context.Variable) bool) ([]safetensors.Tensor, error) {
	var out []safetensors.Tensor
	if ctx == nil {
		return nil, nil
	}
	for v := range ctx.IterVariables() {
		if v.Trainable || !keep(v) || !v.HasValue() {
			continue
		}
		val, err := v.Value()
		if err != nil {
			return nil, err
		}
		st, err := toSafetensor(prefix+v.ScopeAndName(), val)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// ownModelVariable reports whether a non-trainable variable of the
// model's context is the model's state (not the Trainer's gradients and
// loss scale, GoMLX's metrics (named with a random id), the global step
// the masters' context holds, or the learning rate).
func ownModelVariable(v *context.Variable) bool {
	s := v.Scope()
	switch {
	case strings.HasPrefix(s, "/goaccel"), strings.HasPrefix(s, "/metrics"), strings.HasPrefix(s, "/trainer"):
		return false
	case s == "/" && v.Name() == optimizers.GlobalStepVariableName:
		return false
	case v.Name() == optimizers.ParamLearningRate:
		return false
	}
	return true
}

// LoadStateTensors implements accelerate.TensorState. It may run before
// the first step (the model's variables do not exist yet): the variables
// are created with these values, and the model takes them when it builds.
func (o *optimizerState) LoadStateTensors(ts []safetensors.Tensor) error {
	t := o.t
	if t.sharded {
		t.mu.Lock()
		built := t.shard != nil
		if !built {
			t.pending = ts // the share is known when the model builds
		}
		t.mu.Unlock()
		if !built {
			return nil
		}
		var err error
		if ts, err = t.shareOfState(ts); err != nil {
			return err
		}
	}
	t.mu.Lock()
	if t.masters == nil {
		t.masters = context.New()
	}
	masters := t.masters
	t.mu.Unlock()
	for _, st := range ts {
		ctx, name := masters, st.Name
		if rest, ok := strings.CutPrefix(name, modelPrefix); ok {
			ctx, name = t.ctx, rest
		}
		val, err := fromSafetensor(st)
		if err != nil {
			return err
		}
		scope, vname := splitScopeName(name)
		if v := ctx.GetVariableByScopeAndName(scope, vname); v != nil {
			if !v.Shape().Equal(val.Shape()) {
				return fmt.Errorf("gomlx: %s is %s in the checkpoint, %s here", name, val.Shape(), v.Shape())
			}
			if err := v.SetValue(val); err != nil {
				return fmt.Errorf("gomlx: %s: %w", name, err)
			}
			continue
		}
		ctx.Checked(false).InAbsPath(scope).VariableWithValue(vname, val).SetTrainable(false)
	}
	if t.fused {
		// The loaded variables are the optimizer's state (the model's
		// global step among them), and the next step's rate follows it.
		t.mu.Lock()
		if t.optState == nil {
			t.optState = map[string]bool{}
		}
		for _, st := range ts {
			if !strings.HasPrefix(st.Name, modelPrefix) {
				t.optState[st.Name] = true
			}
		}
		t.mu.Unlock()
		return t.prepareLearningRate()
	}
	// The model's global step (train.Loop and RunToGlobalStep read it) is
	// the optimizer's.
	if gs := masters.GetVariableByScopeAndName("/", optimizers.GlobalStepVariableName); gs != nil && gs.HasValue() {
		v, err := gs.Value()
		if err != nil {
			return err
		}
		c, err := v.LocalClone()
		if err != nil {
			return err
		}
		if err := optimizers.GetGlobalStepVar(t.ctx).SetValue(c); err != nil {
			return err
		}
	}
	return nil
}

// splitScopeName splits "/a/b/name" into "/a/b" and "name".
func splitScopeName(s string) (scope, name string) {
	i := strings.LastIndex(s, context.ScopeSeparator)
	if i <= 0 {
		return context.RootScope, strings.TrimPrefix(s, context.ScopeSeparator)
	}
	return s[:i], s[i+1:]
}

// safetensors' names of GoMLX dtypes.
var stDTypes = map[dtypes.DType]safetensors.DType{
	dtypes.Float64: safetensors.F64, dtypes.Float32: safetensors.F32, dtypes.Float16: safetensors.F16,
	dtypes.BFloat16: safetensors.BF16, dtypes.Int64: safetensors.I64, dtypes.Int32: safetensors.I32,
	dtypes.Int16: safetensors.I16, dtypes.Int8: safetensors.I8, dtypes.Uint64: safetensors.U64,
	dtypes.Uint32: safetensors.U32, dtypes.Uint16: safetensors.U16, dtypes.Uint8: safetensors.U8,
	dtypes.Bool: safetensors.Bool,
}

func toSafetensor(name string, t *tensors.Tensor) (safetensors.Tensor, error) {
	dt, ok := stDTypes[t.DType()]
	if !ok {
		return safetensors.Tensor{}, fmt.Errorf("gomlx: %s is %s, which safetensors cannot hold", name, t.DType())
	}
	st := safetensors.Tensor{Name: name, DType: dt, Shape: append([]int{}, t.Shape().Dimensions...)}
	err := t.ConstBytes(func(b []byte) { st.Data = append([]byte(nil), b...) })
	return st, err
}

func fromSafetensor(st safetensors.Tensor) (*tensors.Tensor, error) {
	for gd, sd := range stDTypes {
		if sd == st.DType {
			t := tensors.FromShape(shapes.Make(gd, st.Shape...))
			if t.Shape().Memory() != uintptr(len(st.Data)) {
				return nil, fmt.Errorf("gomlx: %s holds %d bytes for %s", st.Name, len(st.Data), t.Shape())
			}
			err := t.MutableBytes(func(b []byte) { copy(b, st.Data) })
			return t, err
		}
	}
	return nil, fmt.Errorf("gomlx: %s is %s, which GoMLX has no dtype for", st.Name, st.DType)
}

// checkDivergence compares, every checkEvery optimizer steps, a checksum
// of each master with process 0's: a process whose masters differ (a bug,
// or a collective that did not reach it) is an error naming the process
// and the first such variable. It is a collective.
func (t *Trainer) checkDivergence() error {
	every := t.checkEvery()
	t.mu.Lock()
	steps := t.steps
	t.mu.Unlock()
	if every <= 0 || steps%every != 0 {
		return nil
	}
	params := t.model.Parameters32()
	names := t.model.ParameterNames()
	var mine bytes.Buffer
	for _, p := range params {
		h := fnv.New64a()
		var b [4]byte
		for _, x := range p {
			binary.LittleEndian.PutUint32(b[:], math.Float32bits(x))
			h.Write(b[:])
		}
		_ = binary.Write(&mine, binary.LittleEndian, h.Sum64())
	}
	r, err := t.acc.Reducer()
	if err != nil {
		return err
	}
	all, err := r.AllGatherBytes(mine.Bytes())
	if err != nil {
		return fmt.Errorf("gomlx: divergence check: %w", err)
	}
	var diverged []string
	for rank := 1; rank < len(all); rank++ {
		if bytes.Equal(all[rank], all[0]) {
			continue
		}
		name := "?"
		for i := range names {
			if i*8+8 <= len(all[rank]) && !bytes.Equal(all[rank][i*8:i*8+8], all[0][i*8:i*8+8]) {
				name = names[i]
				break
			}
		}
		diverged = append(diverged, fmt.Sprintf("process %d (first: %s)", rank, name))
	}
	if len(diverged) > 0 {
		sort.Strings(diverged)
		return fmt.Errorf("gomlx: after optimizer step %d the variables of %s differ from process 0's: the processes no longer train the same model",
			steps, strings.Join(diverged, ", "))
	}
	return nil
}
