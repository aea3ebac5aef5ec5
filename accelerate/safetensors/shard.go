package safetensors

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Names of transformers' safetensors checkpoints.
const (
	WeightsName      = "model.safetensors"
	WeightsIndexName = "model.safetensors.index.json"
)

// DefaultMaxShardSize is Accelerate's save_model default, "10GB".
const DefaultMaxShardSize int64 = 10_000_000_000

// Index is the content of model.safetensors.index.json.
type Index struct {
	Metadata  map[string]any    `json:"metadata"`
	WeightMap map[string]string `json:"weight_map"`
}

// Shards splits tensors, in order, into shards of at most maxShardSize
// bytes of data, as huggingface_hub's split_state_dict_into_shards does: a
// tensor that would push the current shard past the limit starts a new one,
// and a tensor larger than the limit gets a shard of its own.
func Shards(tensors []Tensor, maxShardSize int64) [][]Tensor {
	var out [][]Tensor
	var cur []Tensor
	var size int64
	for _, t := range tensors {
		n := int64(len(t.Data))
		if len(cur) > 0 && size+n > maxShardSize {
			out = append(out, cur)
			cur, size = nil, 0
		}
		cur = append(cur, t)
		size += n
	}
	if len(cur) > 0 || len(out) == 0 {
		out = append(out, cur)
	}
	return out
}

// ShardName is transformers' name of shard i (0-based) of n:
// model-00001-of-00003.safetensors.
func ShardName(i, n int) string {
	return fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, n)
}

// WriteSharded writes tensors into dir as transformers does: a single
// model.safetensors when they fit in maxShardSize bytes (<= 0: the default,
// 10 GB), otherwise model-0000i-of-0000N.safetensors shards plus
// model.safetensors.index.json. Each file is written atomically; files of an
// earlier save in dir that this one does not rewrite (stale shards, a stale
// index) are removed afterwards. It returns the names of the files written.
func WriteSharded(dir string, tensors []Tensor, metadata map[string]string, maxShardSize int64) ([]string, error) {
	if maxShardSize <= 0 {
		maxShardSize = DefaultMaxShardSize
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	shards := Shards(tensors, maxShardSize)
	var names []string
	if len(shards) == 1 {
		if err := WriteFile(filepath.Join(dir, WeightsName), shards[0], metadata); err != nil {
			return nil, err
		}
		names = []string{WeightsName}
	} else {
		idx := Index{Metadata: map[string]any{}, WeightMap: map[string]string{}}
		var total, params int64
		for i, sh := range shards {
			name := ShardName(i, len(shards))
			if err := WriteFile(filepath.Join(dir, name), sh, metadata); err != nil {
				return nil, err
			}
			for _, t := range sh {
				idx.WeightMap[t.Name] = name
				total += int64(len(t.Data))
				params += int64(t.Elements())
			}
			names = append(names, name)
		}
		idx.Metadata["total_size"] = total
		idx.Metadata["total_parameters"] = params
		b, err := json.MarshalIndent(idx, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("safetensors: %w", err)
		}
		if err := writeAtomic(filepath.Join(dir, WeightsIndexName), func(w io.Writer) error {
			_, err := w.Write(append(b, '\n'))
			return err
		}); err != nil {
			return nil, err
		}
		names = append(names, WeightsIndexName)
	}
	keep := map[string]bool{}
	for _, n := range names {
		keep[n] = true
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	for _, e := range entries {
		n := e.Name()
		if keep[n] || e.IsDir() {
			continue
		}
		if n == WeightsName || n == WeightsIndexName || (strings.HasPrefix(n, "model-") && strings.HasSuffix(n, ".safetensors")) {
			if err := os.Remove(filepath.Join(dir, n)); err != nil {
				return nil, fmt.Errorf("safetensors: removing the stale %s: %w", n, err)
			}
		}
	}
	return names, syncDir(dir)
}

// ReadSharded reads what WriteSharded wrote in dir: the shards listed by
// model.safetensors.index.json when it exists, else model.safetensors. The
// tensors come back in the index's (or the file's) order.
func ReadSharded(dir string) ([]Tensor, map[string]string, error) {
	ib, err := os.ReadFile(filepath.Join(dir, WeightsIndexName))
	if errors.Is(err, fs.ErrNotExist) {
		f, err := ReadFile(filepath.Join(dir, WeightsName))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("safetensors: %s has neither %s nor %s", dir, WeightsName, WeightsIndexName)
		}
		if err != nil {
			return nil, nil, err
		}
		return f.Tensors, f.Metadata, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("safetensors: %w", err)
	}
	var idx Index
	if err := json.Unmarshal(ib, &idx); err != nil {
		return nil, nil, fmt.Errorf("safetensors: %s: %w", WeightsIndexName, err)
	}
	files := map[string]bool{}
	for _, f := range idx.WeightMap {
		files[f] = true
	}
	order := make([]string, 0, len(files))
	for f := range files {
		if f != filepath.Base(f) {
			return nil, nil, fmt.Errorf("safetensors: %s names %q, outside the directory", WeightsIndexName, f)
		}
		order = append(order, f)
	}
	sort.Strings(order)
	var out []Tensor
	var meta map[string]string
	for _, name := range order {
		f, err := ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, nil, err
		}
		if meta == nil {
			meta = f.Metadata
		}
		for _, t := range f.Tensors {
			if idx.WeightMap[t.Name] != name {
				return nil, nil, fmt.Errorf("safetensors: %s holds %q, which %s maps to %q", name, t.Name, WeightsIndexName, idx.WeightMap[t.Name])
			}
			out = append(out, t)
		}
	}
	if len(out) != len(idx.WeightMap) {
		return nil, nil, fmt.Errorf("safetensors: %s lists %d tensors, the shards hold %d", WeightsIndexName, len(idx.WeightMap), len(out))
	}
	return out, meta, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("safetensors: syncing %s: %w", dir, err)
	}
	return nil
}
