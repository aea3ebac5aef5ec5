package checkpoint

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/accelerate/safetensors"
)

// A sharded state (FSDP's SHARDED_STATE_DICT) is written by every process:
// file base-shard-R-of-N.safetensors holds process R's ranges of whole
// tensors, each named "name[from:to]" (flat element indices, to excluded,
// one dimension), with the whole tensors' shapes in the file's metadata
// (ShapesKey, JSON); tensors not cut in ranges are whole (process 0's).
// JoinShards makes the whole tensors again, for any number of processes.

// ShapesKey is the safetensors metadata key holding the whole shapes.
const ShapesKey = "goaccel_whole_shapes"

// ShardFile is the name of process rank's file of a state of n shards.
func ShardFile(base string, rank, n int) string {
	return fmt.Sprintf("%s-shard-%05d-of-%05d.safetensors", base, rank, n)
}

// RangeName names the range [from, to) of a whole tensor's flat values.
func RangeName(name string, from, to int) string {
	return name + "[" + strconv.Itoa(from) + ":" + strconv.Itoa(to) + "]"
}

// parseRange splits "name[from:to]".
func parseRange(s string) (name string, from, to int, ok bool) {
	if !strings.HasSuffix(s, "]") {
		return "", 0, 0, false
	}
	i := strings.LastIndex(s, "[")
	if i < 0 {
		return "", 0, 0, false
	}
	a, b, found := strings.Cut(s[i+1:len(s)-1], ":")
	if !found {
		return "", 0, 0, false
	}
	from, err1 := strconv.Atoi(a)
	to, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || from < 0 || to < from {
		return "", 0, 0, false
	}
	return s[:i], from, to, true
}

// ShapesMetadata is the metadata a shard file carries.
func ShapesMetadata(shapes map[string][]int) (map[string]string, error) {
	b, err := json.Marshal(shapes)
	if err != nil {
		return nil, err
	}
	return map[string]string{ShapesKey: string(b)}, nil
}

// JoinShards makes whole tensors from the shard files' tensors (files[r]
// is process r's): every range is copied into its whole tensor, and a
// whole tensor that the ranges do not cover exactly once is an error
// naming it.
func JoinShards(files []*safetensors.File) ([]safetensors.Tensor, error) {
	type whole struct {
		t      safetensors.Tensor
		filled int
		size   int // bytes per element
	}
	joined := map[string]*whole{}
	var plain []safetensors.Tensor
	seen := map[string]bool{}
	for r, f := range files {
		shapes := map[string][]int{}
		if s := f.Metadata[ShapesKey]; s != "" {
			if err := json.Unmarshal([]byte(s), &shapes); err != nil {
				return nil, fmt.Errorf("checkpoint: shard %d: the whole shapes: %w", r, err)
			}
		}
		for _, t := range f.Tensors {
			name, from, to, ok := parseRange(t.Name)
			shape, known := shapes[name]
			if !ok || !known {
				if !seen[t.Name] {
					seen[t.Name] = true
					plain = append(plain, t)
				}
				continue
			}
			w := joined[name]
			if w == nil {
				n := 1
				for _, d := range shape {
					n *= d
				}
				es := t.DType.Size()
				if es == 0 {
					return nil, fmt.Errorf("checkpoint: shard %d: %s has dtype %s", r, t.Name, t.DType)
				}
				w = &whole{t: safetensors.Tensor{Name: name, DType: t.DType, Shape: append([]int(nil), shape...), Data: make([]byte, n*es)}, size: es}
				joined[name] = w
			}
			if t.DType != w.t.DType || len(t.Data) != (to-from)*w.size || to*w.size > len(w.t.Data) {
				return nil, fmt.Errorf("checkpoint: shard %d: %s does not fit %s %v", r, t.Name, w.t.DType, w.t.Shape)
			}
			copy(w.t.Data[from*w.size:], t.Data)
			w.filled += to - from
		}
	}
	names := make([]string, 0, len(joined))
	for n := range joined {
		names = append(names, n)
	}
	sort.Strings(names)
	out := plain
	for _, n := range names {
		w := joined[n]
		if w.filled*w.size != len(w.t.Data) {
			return nil, fmt.Errorf("checkpoint: the shards cover %d of the %d values of %s", w.filled, len(w.t.Data)/w.size, n)
		}
		out = append(out, w.t)
	}
	return out, nil
}

// ReadTensors reads the tensors of base: base.safetensors, or with shards
// > 0 every process's shard file, joined.
func (m *Manifest) ReadTensors(dir, base string, shards int) ([]safetensors.Tensor, error) {
	if shards <= 0 {
		b, err := m.ReadFile(dir, base+".safetensors")
		if err != nil {
			return nil, err
		}
		f, err := safetensors.Decode(b)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: %s.safetensors: %w", base, err)
		}
		return f.Tensors, nil
	}
	files := make([]*safetensors.File, shards)
	for r := range files {
		name := ShardFile(base, r, shards)
		b, err := m.ReadFile(dir, name)
		if err != nil {
			return nil, err
		}
		if files[r], err = safetensors.Decode(b); err != nil {
			return nil, fmt.Errorf("checkpoint: %s: %w", name, err)
		}
	}
	return JoinShards(files)
}
