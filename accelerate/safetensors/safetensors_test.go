package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func sample() []Tensor {
	return []Tensor{
		FromFloat64s("layers.0.weight", []int{2, 3}, []float64{1, 2, 3, 4, 5, -6.5}),
		FromFloat32s("layers.0.bias", []int{2}, []float32{0.25, -1}),
		FromInt64s("step", []int{}, []int64{7}),
		FromFloat64s("empty", []int{0, 4}, nil),
	}
}

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	meta := map[string]string{"format": "pt"}
	if err := Encode(&buf, sample(), meta); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	n := binary.LittleEndian.Uint64(b)
	if (8+n)%8 != 0 || b[8] != '{' {
		t.Fatalf("header of %d bytes is not aligned or not an object", n)
	}
	f, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.Metadata, meta) {
		t.Errorf("metadata %v", f.Metadata)
	}
	want := sample()
	if len(f.Tensors) != len(want) {
		t.Fatalf("%d tensors", len(f.Tensors))
	}
	for _, w := range want {
		g, ok := f.Tensor(w.Name)
		if !ok || g.DType != w.DType || !reflect.DeepEqual(g.Shape, w.Shape) || !bytes.Equal(g.Data, w.Data) {
			t.Errorf("%s: got %+v", w.Name, g)
		}
	}
	w, _ := f.Tensor("layers.0.weight")
	got := make([]float64, 6)
	if err := w.Float64s(got); err != nil || got[5] != -6.5 {
		t.Errorf("Float64s = %v, %v", got, err)
	}
	bias, _ := f.Tensor("layers.0.bias")
	g32 := make([]float32, 2)
	if err := bias.Float32s(g32); err != nil || g32[1] != -1 {
		t.Errorf("Float32s = %v, %v", g32, err)
	}
	if err := bias.Float32s(make([]float32, 3)); err == nil || !strings.Contains(err.Error(), `"layers.0.bias" has 2 elements, the destination 3`) {
		t.Errorf("length mismatch: %v", err)
	}
	st, _ := f.Tensor("step")
	if v, err := st.Int64s(); err != nil || v[0] != 7 {
		t.Errorf("Int64s = %v, %v", v, err)
	}
}

// The fixture was written by Python's safetensors (numpy API):
//
//	save_file({"a": np.arange(6, dtype=np.float64).reshape(2, 3),
//	           "b": np.array([1.5, -2], dtype=np.float32)}, "numpy.safetensors",
//	          metadata={"who": "python"})
func TestReadsPythonFile(t *testing.T) {
	f, err := ReadFile(filepath.Join("testdata", "numpy.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	a, ok := f.Tensor("a")
	if !ok || a.DType != F64 || !reflect.DeepEqual(a.Shape, []int{2, 3}) {
		t.Fatalf("a = %+v", a)
	}
	got := make([]float64, 6)
	if err := a.Float64s(got); err != nil || !reflect.DeepEqual(got, []float64{0, 1, 2, 3, 4, 5}) {
		t.Errorf("a = %v, %v", got, err)
	}
	b, _ := f.Tensor("b")
	g32 := make([]float32, 2)
	if err := b.Float32s(g32); err != nil || g32[0] != 1.5 || g32[1] != -2 {
		t.Errorf("b = %v, %v", g32, err)
	}
	if f.Metadata["who"] != "python" {
		t.Errorf("metadata %v", f.Metadata)
	}
}

func encodeHeader(h string, data []byte) []byte {
	b := make([]byte, 8, 8+len(h)+len(data))
	binary.LittleEndian.PutUint64(b, uint64(len(h)))
	return append(append(b, h...), data...)
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"short", []byte{1, 2}, "too short"},
		{"length past end", encodeHeader("{}", nil)[:9], "runs past the end"},
		{"not an object", encodeHeader("[1]", nil), "not a JSON object"},
		{"bad dtype", encodeHeader(`{"x":{"dtype":"F128","shape":[1],"data_offsets":[0,8]}}`, make([]byte, 8)), `unknown dtype "F128"`},
		{"shape vs bytes", encodeHeader(`{"x":{"dtype":"F64","shape":[2],"data_offsets":[0,8]}}`, make([]byte, 8)), "needs 16 bytes, the data has 8"},
		{"outside", encodeHeader(`{"x":{"dtype":"F64","shape":[1],"data_offsets":[8,16]}}`, make([]byte, 8)), "outside the 8-byte data section"},
		{"hole", encodeHeader(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, make([]byte, 2)), "starts at byte 1 of the data, expected 0"},
		{"trailing", encodeHeader(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, make([]byte, 2)), "cover 1 bytes of a 2-byte data section"},
		{"overlap", encodeHeader(`{"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"y":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, make([]byte, 2)), "holes or overlaps"},
		{"metadata", encodeHeader(`{"__metadata__":{"a":1}}`, nil), "__metadata__ must map strings to strings"},
	}
	for _, c := range cases {
		_, err := Decode(c.b)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

func TestEncodeErrors(t *testing.T) {
	var buf bytes.Buffer
	dup := []Tensor{FromFloat64s("a", []int{1}, []float64{1}), FromFloat64s("a", []int{1}, []float64{2})}
	if err := Encode(&buf, dup, nil); err == nil || !strings.Contains(err.Error(), `"a" appears twice`) {
		t.Errorf("duplicate: %v", err)
	}
	bad := Tensor{Name: "w", DType: F64, Shape: []int{3}, Data: make([]byte, 16)}
	if err := Encode(&buf, []Tensor{bad}, nil); err == nil || !strings.Contains(err.Error(), "needs 24 bytes") {
		t.Errorf("size: %v", err)
	}
}

func TestShardsAndIndex(t *testing.T) {
	ts := []Tensor{
		FromFloat64s("a", []int{4}, make([]float64, 4)),   // 32 bytes
		FromFloat64s("b", []int{4}, make([]float64, 4)),   // 32
		FromFloat64s("c", []int{10}, make([]float64, 10)), // 80: larger than the limit
		FromFloat64s("d", []int{1}, []float64{3}),         // 8
	}
	var sizes [][]string
	for _, sh := range Shards(ts, 64) {
		var n []string
		for _, x := range sh {
			n = append(n, x.Name)
		}
		sizes = append(sizes, n)
	}
	if want := [][]string{{"a", "b"}, {"c"}, {"d"}}; !reflect.DeepEqual(sizes, want) {
		t.Fatalf("shards %v, want %v", sizes, want)
	}

	dir := t.TempDir()
	// A previous single-file save and a stray shard must not survive.
	os.WriteFile(filepath.Join(dir, WeightsName), []byte("old"), 0o644)
	os.WriteFile(filepath.Join(dir, "model-00009-of-00009.safetensors"), []byte("old"), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("keep"), 0o644)
	names, err := WriteSharded(dir, ts, map[string]string{"format": "pt"}, 64)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors", "model-00003-of-00003.safetensors", WeightsIndexName}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("files %v", names)
	}
	entries, _ := os.ReadDir(dir)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if !reflect.DeepEqual(left, append(want[:3:3], WeightsIndexName, "notes.txt")) {
		t.Errorf("directory holds %v", left)
	}
	var idx Index
	b, _ := os.ReadFile(filepath.Join(dir, WeightsIndexName))
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	if idx.WeightMap["c"] != want[1] || idx.Metadata["total_size"] != float64(152) {
		t.Errorf("index %+v", idx)
	}
	back, meta, err := ReadSharded(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != 4 || back[2].Name != "c" || meta["format"] != "pt" {
		t.Errorf("read back %d tensors, meta %v", len(back), meta)
	}

	// Saving again unsharded removes the shards and the index.
	if _, err := WriteSharded(dir, ts, nil, 0); err != nil {
		t.Fatal(err)
	}
	entries, _ = os.ReadDir(dir)
	left = left[:0]
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if !reflect.DeepEqual(left, []string{WeightsName, "notes.txt"}) {
		t.Errorf("after an unsharded save: %v", left)
	}
	if _, _, err := ReadSharded(t.TempDir()); err == nil || !strings.Contains(err.Error(), "has neither model.safetensors nor model.safetensors.index.json") {
		t.Errorf("empty dir: %v", err)
	}
}
