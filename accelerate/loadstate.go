package accelerate

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/goaccel/goaccel/accelerate/amp"
	"github.com/goaccel/goaccel/accelerate/checkpoint"
	"github.com/goaccel/goaccel/accelerate/safetensors"
)

// loadTarget resolves LoadState's directory.
func (a *Accelerator) loadTarget(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	a.train.mu.Lock()
	auto := a.train.autoNaming
	a.train.mu.Unlock()
	if !auto {
		return "", errors.New("accelerate: LoadState: no input directory given and automatic checkpoint naming is off")
	}
	n, err := checkpoint.Newest(a.checkpointRoot())
	if err != nil {
		return "", fmt.Errorf("accelerate: LoadState: %w", err)
	}
	return n.Path, nil
}

// LatestCheckpoint is the directory LoadState("") would load: the newest
// complete checkpoint under ProjectDir/checkpoints; "" when there is none
// (or automatic checkpoint naming is off).
func (a *Accelerator) LatestCheckpoint() string {
	a.train.mu.Lock()
	auto := a.train.autoNaming
	a.train.mu.Unlock()
	if !auto {
		return ""
	}
	n, err := checkpoint.Newest(a.checkpointRoot())
	if err != nil {
		return ""
	}
	return n.Path
}

// loaded is a checkpoint read and checked, ready to apply.
type loaded struct {
	dir    string
	man    *checkpoint.Manifest
	models []map[string]safetensors.Tensor
	views  []*modelView
	// later are the deferred models not built yet (nil for others): their
	// tensors are kept for DeferredModel.Build.
	later []*DeferredModel
	opts  [][]byte
	// optTensors are the states of TensorState optimizers (nil for others).
	optTensors [][]safetensors.Tensor
	custom     [][]byte
	scaler     *amp.ScalerState
	rank       rankState
}

// LoadState is Accelerate's load_state: it restores what SaveState saved —
// the prepared models' parameters, the optimizers' state, the loss scaler,
// this process's random generator and step counter, and the registered
// objects — into the objects prepared and registered so far (in the same
// order as when saving). dir "" loads the newest checkpoint under
// ProjectDir/checkpoints (automatic checkpoint naming; the error wraps
// ErrNoCheckpoint when there is none), and the next SaveState("") then
// writes checkpoint_{K+1}.
//
// A checkpoint saved by another number of processes resumes (the state
// in it is whole; processes beyond the saved number keep their random
// generators). One for models of other shapes, with other optimizers or registered objects, or an incomplete or
// corrupt one, is an error naming the difference; nothing is changed then.
// Every process must call it; after Prepare, it is how a launched function
// resumes after a restart:
//
//	out, _ := acc.Prepare(model, opt)
//	if err := acc.LoadState(""); err != nil && !errors.Is(err, accelerate.ErrNoCheckpoint) {
//	    return err
//	}
//	for step := acc.Step(); step < steps; step++ { ... }
func (a *Accelerator) LoadState(dir string) error {
	target, err := a.loadTarget(dir)
	var l *loaded
	if err == nil {
		l, err = a.readState(target)
	}
	paths, err := a.agree("LoadState", err, []byte(target))
	if err != nil {
		return err
	}
	for r, p := range paths {
		if string(p) != target {
			return fmt.Errorf("accelerate: LoadState: process %d chose %s, process %d %s: every process must load the same checkpoint", r, p, a.ProcessIndex(), target)
		}
	}
	err = a.applyState(l)
	if _, err := a.agree("LoadState", err, nil); err != nil {
		return err
	}
	a.logger.Debugf("accelerate: loaded the training state from %s", target)
	return nil
}

// readState reads and checks everything before anything is changed.
func (a *Accelerator) readState(dir string) (*loaded, error) {
	man, err := checkpoint.ReadManifest(dir)
	if err != nil {
		return nil, fmt.Errorf("accelerate: LoadState: %w", err)
	}
	fail := func(format string, args ...any) (*loaded, error) {
		return nil, fmt.Errorf("accelerate: LoadState %s: "+format, append([]any{dir}, args...)...)
	}
	// Another number of processes resumes too: the model and optimizer
	// state are whole in a checkpoint (an FSDP-sharded optimizer takes its
	// new share); a process the checkpoint has no random state for takes
	// process 0's step and keeps its own random generators.
	rankFile := randomFile(a.ProcessIndex())
	ownRNG := a.ProcessIndex() < man.WorldSize
	if !ownRNG {
		rankFile = randomFile(0)
	}
	a.train.mu.Lock()
	models := append([]trackedModel(nil), a.train.models...)
	opts := append([]any(nil), a.train.optimizers...)
	custom := append([]any(nil), a.train.custom...)
	a.train.mu.Unlock()
	if len(man.Models) != len(models) {
		return fail("the checkpoint holds %d models, %d were prepared", len(man.Models), len(models))
	}
	if len(man.Optimizers) != len(opts) {
		return fail("the checkpoint holds %d optimizers (%s), %d were prepared", len(man.Optimizers), strings.Join(man.Optimizers, ", "), len(opts))
	}
	if len(man.Custom) != len(custom) {
		return fail("the checkpoint holds %d registered objects, %d are registered", len(man.Custom), len(custom))
	}
	if man.Scaler != (a.scaler != nil) {
		return fail("the checkpoint %s, this Accelerator %s (mixed precision %s)", hasScaler(man.Scaler), hasScaler(a.scaler != nil), a.MixedPrecision())
	}
	l := &loaded{dir: dir, man: man}
	for i, m := range models {
		d := m.wrapped()
		if d == nil {
			// Not built yet: its tensors wait for Build, which checks them.
			ts, err := man.ReadTensors(dir, numbered("model", i, ""), man.Models[i].Shards)
			if err != nil {
				return fail("model %d: %v", i, err)
			}
			by := map[string]safetensors.Tensor{}
			for _, t := range ts {
				by[t.Name] = t
			}
			l.models, l.views, l.later = append(l.models, by), append(l.views, nil), append(l.later, m.later)
			continue
		}
		v, err := viewOf(d)
		if err != nil {
			return fail("model %d: %v", i, err)
		}
		if cm := man.Models[i]; cm.DType != string(v.dtype) {
			return fail("model %d has %s parameters in the checkpoint, %s in this run", i, cm.DType, v.dtype)
		}
		ts, err := man.ReadTensors(dir, numbered("model", i, ""), man.Models[i].Shards)
		if err != nil {
			return fail("model %d: %v", i, err)
		}
		by, err := v.check(ts, true)
		if err != nil {
			return fail("model %d: %v", i, err)
		}
		l.models, l.views, l.later = append(l.models, by), append(l.views, v), append(l.later, nil)
	}
	for i, o := range opts {
		if got := fmt.Sprintf("%T", o); got != man.Optimizers[i] {
			return fail("optimizer %d is a %s in the checkpoint, a %s in this run", i, man.Optimizers[i], got)
		}
		shards := 0
		if i < len(man.OptimizerShards) {
			shards = man.OptimizerShards[i]
		}
		if _, ok := o.(TensorState); ok {
			ts, err := man.ReadTensors(dir, numbered("optimizer", i, ""), shards)
			if err != nil {
				return fail("optimizer %d: %v", i, err)
			}
			l.opts = append(l.opts, nil)
			l.optTensors = append(l.optTensors, ts)
			continue
		}
		if shards > 0 {
			return fail("optimizer %d's state is in shards, which only an optimizer with tensor state (accelerate.TensorState) can load", i)
		}
		if _, ok := o.(encoding.BinaryUnmarshaler); !ok {
			return fail("optimizer %d (%T) cannot be restored: it has no UnmarshalBinary", i, o)
		}
		b, err := man.ReadFile(dir, optimizerFile(i))
		if err != nil {
			return nil, fmt.Errorf("accelerate: LoadState: %w", err)
		}
		l.opts = append(l.opts, b)
		l.optTensors = append(l.optTensors, nil)
	}
	for i := range custom {
		b, err := man.ReadFile(dir, customFile(i))
		if err != nil {
			return nil, fmt.Errorf("accelerate: LoadState: %w", err)
		}
		l.custom = append(l.custom, b)
	}
	if man.Scaler {
		b, err := man.ReadFile(dir, scalerFile)
		if err != nil {
			return nil, fmt.Errorf("accelerate: LoadState: %w", err)
		}
		l.scaler = &amp.ScalerState{}
		if err := json.Unmarshal(b, l.scaler); err != nil {
			return fail("%s: %v", scalerFile, err)
		}
	}
	b, err := man.ReadFile(dir, rankFile)
	if err != nil {
		return nil, fmt.Errorf("accelerate: LoadState: %w", err)
	}
	if err := json.Unmarshal(b, &l.rank); err != nil || (ownRNG && l.rank.Rank != a.ProcessIndex()) {
		return fail("%s is not process %d's state (%v)", rankFile, a.ProcessIndex(), err)
	}
	if !ownRNG {
		l.rank.RNG = nil
	}
	return l, nil
}

func hasScaler(b bool) string {
	if b {
		return "has a loss scaler (fp16)"
	}
	return "has no loss scaler"
}

// applyState changes the models, optimizers, registered objects, scaler,
// generator and counters.
func (a *Accelerator) applyState(l *loaded) error {
	for i, v := range l.views {
		if l.later[i] != nil {
			l.later[i].loadLater(l.models[i])
			continue
		}
		if err := v.load(l.models[i]); err != nil {
			return fmt.Errorf("accelerate: LoadState: model %d: %w", i, err)
		}
	}
	a.train.mu.Lock()
	opts := append([]any(nil), a.train.optimizers...)
	custom := append([]any(nil), a.train.custom...)
	a.train.mu.Unlock()
	for i, o := range opts {
		if ts, ok := o.(TensorState); ok {
			if err := ts.LoadStateTensors(l.optTensors[i]); err != nil {
				return fmt.Errorf("accelerate: LoadState: optimizer %d (%T): %w", i, o, err)
			}
			continue
		}
		if err := o.(encoding.BinaryUnmarshaler).UnmarshalBinary(l.opts[i]); err != nil {
			return fmt.Errorf("accelerate: LoadState: optimizer %d (%T): %w", i, o, err)
		}
	}
	for i, o := range custom {
		if err := decodeCustom(o, l.custom[i]); err != nil {
			return fmt.Errorf("accelerate: LoadState: registered object %d (%T): %w", i, o, err)
		}
	}
	if l.scaler != nil {
		if err := a.scaler.LoadState(*l.scaler); err != nil {
			return fmt.Errorf("accelerate: LoadState: %w", err)
		}
	}
	if l.rank.RNG != nil {
		if err := rngUnmarshal(l.rank.RNG); err != nil {
			return err
		}
	}
	a.train.mu.Lock()
	a.train.step = l.rank.Step
	a.train.syncGradients = l.rank.SyncGradients
	if k, ok := checkpoint.IterationOf(l.dir); ok && a.train.autoNaming {
		a.train.iteration = k + 1
	}
	a.train.mu.Unlock()
	return nil
}
