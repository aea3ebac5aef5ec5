package cli

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/accelerate/checkpoint"
	"github.com/goaccel/goaccel/accelerate/safetensors"
)

// shardedCheckpoint writes a checkpoint whose model is in 2 processes'
// shards, as SaveState writes it with SHARDED_STATE_DICT: "w" (2×3) cut at
// value 4, "b" (2) whole in process 1's share.
func shardedCheckpoint(t *testing.T, dropLast bool) string {
	t.Helper()
	final := filepath.Join(t.TempDir(), "ckpt")
	staging, err := checkpoint.Begin(final)
	if err != nil {
		t.Fatal(err)
	}
	shapes := map[string][]int{"w": {2, 3}, "b": {2}}
	shares := [][]safetensors.Tensor{
		{safetensors.FromFloat32s(checkpoint.RangeName("w", 0, 4), []int{4}, []float32{0, 1, 2, 3})},
		{safetensors.FromFloat32s(checkpoint.RangeName("w", 4, 6), []int{2}, []float32{4, 5}),
			safetensors.FromFloat32s(checkpoint.RangeName("b", 0, 2), []int{2}, []float32{6, 7})},
	}
	if dropLast {
		shares[1] = shares[1][1:]
	}
	man := &checkpoint.Manifest{WorldSize: 2, Files: map[string]checkpoint.FileInfo{},
		Models: []checkpoint.Model{{DType: "F32", Names: []string{"w", "b"}, Shapes: [][]int{{2, 3}, {2}}, Shards: 2}}}
	for r, ts := range shares {
		md, err := checkpoint.ShapesMetadata(shapes)
		if err != nil {
			t.Fatal(err)
		}
		name := checkpoint.ShardFile("model", r, 2)
		fi, err := checkpoint.WriteFunc(staging, name, r, func(w io.Writer) error { return safetensors.Encode(w, ts, md) })
		if err != nil {
			t.Fatal(err)
		}
		man.Files[name] = fi
	}
	if err := checkpoint.Commit(staging, final, man); err != nil {
		t.Fatal(err)
	}
	return final
}

func TestMergeWeightsJoinsShards(t *testing.T) {
	ckpt := shardedCheckpoint(t, false)
	out := filepath.Join(t.TempDir(), "merged")
	code, stdout, stderr := runCmd(t, "merge-weights", ckpt, out)
	if code != 0 || !strings.Contains(stdout, "2 tensors (joined from 2 processes' shards)") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	f, err := safetensors.ReadFile(filepath.Join(out, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Metadata["format"] != "pt" || len(f.Tensors) != 2 {
		t.Fatalf("merged file: %+v", f)
	}
	w, _ := f.Tensor("w")
	b, _ := f.Tensor("b")
	wv, bv := make([]float32, 6), make([]float32, 2)
	if err := w.Float32s(wv); err != nil || w.Shape[0] != 2 || w.Shape[1] != 3 || wv[0] != 0 || wv[5] != 5 {
		t.Errorf("w %v %v %v", w.Shape, wv, err)
	}
	if err := b.Float32s(bv); err != nil || bv[1] != 7 {
		t.Errorf("b %v %v", bv, err)
	}
}

func TestMergeWeightsRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"merge-weights", shardedCheckpoint(t, true), t.TempDir()}, "the shards cover 4 of the 6 values of w"},
		{[]string{"merge-weights", t.TempDir(), t.TempDir()}, "goaccel_checkpoint.json"},
		{[]string{"merge-weights", "only-one"}, "name the checkpoint directory and the output directory"},
	} {
		code, _, stderr := runCmd(t, tc.args...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q lacks %q", tc.args, code, stderr, tc.want)
		}
	}
}
