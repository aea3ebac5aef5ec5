package accelerate

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/accelerate/checkpoint"
	"github.com/goaccel/goaccel/accelerate/safetensors"
)

// ErrNoCheckpoint is wrapped by LoadState("") when the project has no
// complete checkpoint yet (errors.Is(err, accelerate.ErrNoCheckpoint)).
var ErrNoCheckpoint = checkpoint.ErrNoCheckpoint

// File names inside a checkpoint (Accelerate's, with goaccel's formats).
func modelFile(i int) string     { return numbered("model", i, ".safetensors") }
func optimizerFile(i int) string { return numbered("optimizer", i, ".bin") }

// optimizerTensorsFile is where a TensorState optimizer's state goes.
func optimizerTensorsFile(i int) string { return numbered("optimizer", i, ".safetensors") }

// TensorState is optionally implemented by an optimizer whose state is
// tensors (a GoMLX optimizer's moments and step): SaveState writes them as
// optimizer.safetensors, which Python's safetensors reads, instead of
// MarshalBinary's optimizer.bin, and LoadState gives them back. Prepare
// tracks such an optimizer for SaveState.
type TensorState interface {
	StateTensors() ([]safetensors.Tensor, error)
	LoadStateTensors(tensors []safetensors.Tensor) error
}

// CollectiveTensorState is a TensorState whose state is spread over the
// processes (an FSDP-sharded optimizer's): when CollectiveState is true,
// SaveState calls StateTensors on every process, in step (it gathers the
// whole state to process 0, whose tensors are written; the others return
// none). LoadStateTensors gets the whole state on every process.
type CollectiveTensorState interface {
	TensorState
	CollectiveState() bool
}

// ShardedState is implemented by a model or an optimizer whose state each
// process holds a share of (FSDP with SHARDED_STATE_DICT): when
// ShardedState is true, SaveState has every process write its share
// (ShardTensors: ranges of whole tensors named "name[from:to]", with the
// whole shapes, and on process 0 the tensors not cut in ranges) instead of
// process 0 writing the whole state, and LoadState joins every process's
// share into whole tensors again (package checkpoint's shard files), for
// any number of processes now. `goaccel merge-weights` joins a model's.
type ShardedState interface {
	ShardedState() bool
	ShardTensors() (tensors []safetensors.Tensor, shapes map[string][]int, err error)
}

// shardedState reports whether x saves as shards.
func shardedState(x any) (ShardedState, bool) {
	s, ok := x.(ShardedState)
	return s, ok && s.ShardedState()
}

func customFile(i int) string    { return "custom_checkpoint_" + strconv.Itoa(i) + ".bin" }
func randomFile(rank int) string { return "random_states_" + strconv.Itoa(rank) + ".json" }

const scalerFile = "scaler.json"

func numbered(base string, i int, ext string) string {
	if i == 0 {
		return base + ext
	}
	return base + "_" + strconv.Itoa(i) + ext
}

// processState of one rank, saved in random_states_{rank}.json.
type rankState struct {
	Rank          int    `json:"rank"`
	Step          int    `json:"step"`
	SyncGradients bool   `json:"sync_gradients"`
	RNG           []byte `json:"rng"` // goaccel's RNG (PCG state)
}

// RegisterForCheckpointing is Accelerate's register_for_checkpointing:
// SaveState saves each object and LoadState restores it, in registration
// order. An object is either a value with MarshalBinary and UnmarshalBinary
// (encoding.BinaryMarshaler/BinaryUnmarshaler, e.g. a compiled type) or a
// pointer to a JSON-encodable value (a counter struct declared in a cell,
// say), saved as JSON. The main process writes them.
func (a *Accelerator) RegisterForCheckpointing(objs ...any) error {
	var bad []string
	for i, o := range objs {
		if _, err := encodeCustom(o); err != nil {
			bad = append(bad, fmt.Sprintf("object %d (%T): %v", i, o, err))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("accelerate: RegisterForCheckpointing: every object must be a pointer to a JSON-encodable value or have MarshalBinary and UnmarshalBinary; these cannot be saved and restored: %s", strings.Join(bad, "; "))
	}
	a.train.mu.Lock()
	a.train.custom = append(a.train.custom, objs...)
	a.train.mu.Unlock()
	return nil
}

func encodeCustom(o any) ([]byte, error) {
	if m, ok := o.(encoding.BinaryMarshaler); ok {
		if _, ok := o.(encoding.BinaryUnmarshaler); !ok {
			return nil, errors.New("it has MarshalBinary but no UnmarshalBinary")
		}
		return m.MarshalBinary()
	}
	v := reflect.ValueOf(o)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return nil, errors.New("not a non-nil pointer")
	}
	return json.Marshal(o)
}

func decodeCustom(o any, b []byte) error {
	if u, ok := o.(encoding.BinaryUnmarshaler); ok {
		return u.UnmarshalBinary(b)
	}
	return json.Unmarshal(b, o)
}

// agree is a collective: every process contributes its error (nil for
// success) and a payload; every process gets every payload, or, if any
// process failed, the same error naming the processes that did. It is also
// a barrier.
func (a *Accelerator) agree(op string, err error, payload []byte) ([][]byte, error) {
	type vote struct {
		Err     string `json:"err,omitempty"`
		Payload []byte `json:"payload,omitempty"`
	}
	v := vote{Payload: payload}
	if err != nil {
		v.Err = err.Error()
		if v.Err == "" {
			v.Err = "unknown error"
		}
	}
	b, merr := json.Marshal(v)
	if merr != nil {
		return nil, fmt.Errorf("accelerate: %s: %w", op, merr)
	}
	parts, gerr := a.GatherBytes(b)
	if gerr != nil {
		return nil, fmt.Errorf("accelerate: %s: %w", op, gerr)
	}
	out := make([][]byte, len(parts))
	var errs []string
	for r, p := range parts {
		var pv vote
		if err := json.Unmarshal(p, &pv); err != nil {
			return nil, fmt.Errorf("accelerate: %s: process %d sent an unreadable reply: %w", op, r, err)
		}
		if pv.Err != "" {
			if len(parts) == 1 {
				return nil, err
			}
			errs = append(errs, fmt.Sprintf("process %d: %s", r, pv.Err))
		}
		out[r] = pv.Payload
	}
	if len(errs) > 0 {
		if err != nil {
			// This process's own error stays matchable (errors.Is), with
			// the others' that differ.
			var others []string
			for _, e := range errs {
				if !strings.HasSuffix(e, ": "+err.Error()) {
					others = append(others, e)
				}
			}
			if len(others) == 0 {
				return nil, err
			}
			return nil, fmt.Errorf("%w; also %s", err, strings.Join(others, "; "))
		}
		return nil, fmt.Errorf("accelerate: %s failed on %d of %d processes: %s", op, len(errs), len(parts), strings.Join(errs, "; "))
	}
	return out, nil
}

// checkpointRoot is ProjectDir/checkpoints.
func (a *Accelerator) checkpointRoot() string { return filepath.Join(a.projectDir, "checkpoints") }

// saveTarget resolves SaveState's directory.
func (a *Accelerator) saveTarget(dir string) (string, error) {
	a.train.mu.Lock()
	auto, it := a.train.autoNaming, a.train.iteration
	a.train.mu.Unlock()
	if !auto {
		if dir == "" {
			return "", errors.New("accelerate: SaveState: no directory given and automatic checkpoint naming is off (WithProjectConfiguration(ProjectConfiguration{AutomaticCheckpointNaming: true, ...}))")
		}
		return dir, nil
	}
	if dir != "" {
		return "", fmt.Errorf("accelerate: SaveState(%q): with automatic checkpoint naming the directory is %s/checkpoint_K; pass \"\"", dir, a.checkpointRoot())
	}
	final := filepath.Join(a.checkpointRoot(), checkpoint.DirPrefix+strconv.Itoa(it))
	if _, err := checkpoint.ReadManifest(final); err == nil {
		return "", fmt.Errorf("accelerate: SaveState: checkpoint directory %s (%d) already exists: load it with LoadState(\"\") to continue from it, or start from another Iteration (ProjectConfiguration.Iteration)", final, it)
	}
	return final, nil
}

// SaveState is Accelerate's save_state: it saves everything needed to
// continue training exactly — the prepared models' parameters
// (model.safetensors, model_1.safetensors, ...), the prepared optimizers'
// state (optimizer.bin, ...: SGD's momentum, Adam's moments and step), the
// fp16 loss scaler (scaler.json), every process's random generator state
// and step counter (random_states_{rank}.json) and the objects registered
// with RegisterForCheckpointing (custom_checkpoint_{i}.bin). The main
// process writes the shared files, each process its own; the checkpoint
// becomes visible under its name only once every process has written and
// fsynced its files and the manifest is written (package
// accelerate/checkpoint), so a crash mid-save never leaves a checkpoint
// that loads half.
//
// dir is the checkpoint directory; with automatic checkpoint naming
// (ProjectConfiguration) pass "": the checkpoint goes to
// ProjectDir/checkpoints/checkpoint_K (K counting saves), and beyond
// TotalLimit the oldest are removed. Every process must call it. The
// directory must be on a file system every process sees.
func (a *Accelerator) SaveState(dir string) error {
	final, err := a.saveTarget(dir)
	staging := checkpoint.StagingDir(final)
	if err == nil && a.IsMainProcess() {
		_, err = checkpoint.Begin(final)
	}
	if _, err := a.agree("SaveState", err, nil); err != nil {
		return err
	}
	files, man, err := a.writeState(staging)
	var payload []byte
	if err == nil {
		payload, err = json.Marshal(files)
	}
	parts, err := a.agree("SaveState", err, payload)
	if err != nil {
		if a.IsMainProcess() {
			checkpoint.Abort(staging)
		}
		return err
	}
	err = nil
	if a.IsMainProcess() {
		for r, p := range parts {
			var fs map[string]checkpoint.FileInfo
			if err = json.Unmarshal(p, &fs); err != nil {
				err = fmt.Errorf("accelerate: SaveState: process %d's file list: %w", r, err)
				break
			}
			for k, v := range fs {
				man.Files[k] = v
			}
		}
		if err == nil {
			err = checkpoint.Commit(staging, final, man)
		}
		if err != nil {
			checkpoint.Abort(staging)
		} else {
			a.logger.Debugf("accelerate: saved the training state to %s", final)
		}
	}
	if _, err := a.agree("SaveState", err, nil); err != nil {
		return err
	}
	a.train.mu.Lock()
	auto, limit := a.train.autoNaming, a.train.totalLimit
	if auto {
		a.train.iteration++
	}
	a.train.mu.Unlock()
	if auto && a.IsMainProcess() {
		removed, err := checkpoint.Rotate(a.checkpointRoot(), limit)
		for _, r := range removed {
			a.logger.Debugf("accelerate: removed %s (total limit %d)", r, limit)
		}
		if err != nil {
			return fmt.Errorf("accelerate: SaveState: %w", err)
		}
	}
	return nil
}

// writeState writes this process's files into staging and returns them,
// with the manifest (meaningful on the main process).
func (a *Accelerator) writeState(staging string) (map[string]checkpoint.FileInfo, *checkpoint.Manifest, error) {
	rank := a.ProcessIndex()
	files := map[string]checkpoint.FileInfo{}
	put := func(name string, write func(io.Writer) error) error {
		fi, err := checkpoint.WriteFunc(staging, name, rank, write)
		if err != nil {
			return err
		}
		files[name] = fi
		return nil
	}
	putBytes := func(name string, b []byte) error {
		return put(name, func(w io.Writer) error { _, err := w.Write(b); return err })
	}
	a.train.mu.Lock()
	models := append([]trackedModel(nil), a.train.models...)
	opts := append([]any(nil), a.train.optimizers...)
	custom := append([]any(nil), a.train.custom...)
	rs := rankState{Rank: rank, Step: a.train.step, SyncGradients: a.train.syncGradients}
	man := &checkpoint.Manifest{WorldSize: a.NumProcesses(), Iteration: a.train.iteration, Step: a.train.step,
		Scaler: a.scaler != nil, Files: map[string]checkpoint.FileInfo{}}
	a.train.mu.Unlock()

	putShards := func(base string, s ShardedState) error {
		ts, shapes, err := s.ShardTensors()
		if err != nil {
			return err
		}
		md, err := checkpoint.ShapesMetadata(shapes)
		if err != nil {
			return err
		}
		md["format"] = "pt"
		return put(checkpoint.ShardFile(base, rank, man.WorldSize), func(w io.Writer) error { return safetensors.Encode(w, ts, md) })
	}
	for i, m := range models {
		d := m.wrapped()
		if d == nil {
			return nil, nil, fmt.Errorf("accelerate: SaveState: model %d (%T): %w", i, m.later.model, errNotBuilt)
		}
		if s, ok := shardedState(d.Module()); ok {
			// Each process writes its share: the layout is read without
			// the values, which a sharded model may not hold whole.
			cm, err := layoutOf(d.Module())
			if err != nil {
				return nil, nil, fmt.Errorf("accelerate: SaveState: model %d: %w", i, err)
			}
			cm.Shards = man.WorldSize
			man.Models = append(man.Models, cm)
			if err := putShards(numbered("model", i, ""), s); err != nil {
				return nil, nil, fmt.Errorf("accelerate: SaveState: model %d: %w", i, err)
			}
			continue
		}
		v, err := viewOf(d)
		if err != nil {
			return nil, nil, fmt.Errorf("accelerate: SaveState: model %d: %w", i, err)
		}
		man.Models = append(man.Models, checkpoint.Model{DType: string(v.dtype), Names: v.names, Shapes: v.shapes})
		if rank == 0 {
			ts := v.tensors()
			if err := put(modelFile(i), func(w io.Writer) error { return safetensors.Encode(w, ts, map[string]string{"format": "pt"}) }); err != nil {
				return nil, nil, err
			}
		}
	}
	for i, o := range opts {
		man.Optimizers = append(man.Optimizers, fmt.Sprintf("%T", o))
		if s, ok := shardedState(o); ok {
			if man.OptimizerShards == nil {
				man.OptimizerShards = make([]int, len(opts))
			}
			man.OptimizerShards[i] = man.WorldSize
			if err := putShards(numbered("optimizer", i, ""), s); err != nil {
				return nil, nil, fmt.Errorf("accelerate: SaveState: optimizer %d (%T): %w", i, o, err)
			}
			continue
		}
		if ts, ok := o.(TensorState); ok {
			c, ok := ts.(CollectiveTensorState)
			collective := ok && c.CollectiveState()
			if rank != 0 && !collective {
				continue
			}
			tensors, err := ts.StateTensors()
			if err != nil {
				return nil, nil, fmt.Errorf("accelerate: SaveState: optimizer %d (%T): %w", i, o, err)
			}
			if rank != 0 {
				continue
			}
			if err := put(optimizerTensorsFile(i), func(w io.Writer) error { return safetensors.Encode(w, tensors, nil) }); err != nil {
				return nil, nil, err
			}
			continue
		}
		m, ok := o.(encoding.BinaryMarshaler)
		if _, ok2 := o.(encoding.BinaryUnmarshaler); !ok || !ok2 {
			return nil, nil, fmt.Errorf("accelerate: SaveState: optimizer %d (%T) cannot be saved: it has no MarshalBinary and UnmarshalBinary", i, o)
		}
		if rank == 0 {
			b, err := m.MarshalBinary()
			if err != nil {
				return nil, nil, fmt.Errorf("accelerate: SaveState: optimizer %d (%T): %w", i, o, err)
			}
			if err := putBytes(optimizerFile(i), b); err != nil {
				return nil, nil, err
			}
		}
	}
	for i, o := range custom {
		man.Custom = append(man.Custom, fmt.Sprintf("%T", o))
		if rank == 0 {
			b, err := encodeCustom(o)
			if err != nil {
				return nil, nil, fmt.Errorf("accelerate: SaveState: registered object %d (%T): %w", i, o, err)
			}
			if err := putBytes(customFile(i), b); err != nil {
				return nil, nil, err
			}
		}
	}
	if a.scaler != nil && rank == 0 {
		b, err := json.Marshal(a.scaler.State())
		if err != nil {
			return nil, nil, fmt.Errorf("accelerate: SaveState: scaler: %w", err)
		}
		if err := putBytes(scalerFile, b); err != nil {
			return nil, nil, err
		}
	}
	var err error
	if rs.RNG, err = rngMarshal(); err != nil {
		return nil, nil, fmt.Errorf("accelerate: SaveState: %w", err)
	}
	b, err := json.Marshal(rs)
	if err != nil {
		return nil, nil, fmt.Errorf("accelerate: SaveState: %w", err)
	}
	if err := putBytes(randomFile(rank), b); err != nil {
		return nil, nil, err
	}
	return files, man, nil
}
