// Package safetensors reads and writes HuggingFace's safetensors format: an
// 8-byte little-endian header length, a JSON header naming each tensor's
// dtype, shape and byte range, then the raw little-endian tensor data. Files
// written here load with Python's `safetensors` (numpy, torch, ...) and files
// written there load here.
//
// The format facts followed (from the safetensors specification): the header
// is a JSON object whose keys are tensor names plus an optional
// "__metadata__" object of string values; "data_offsets" are [begin, end)
// relative to the start of the data section; the byte ranges of the tensors
// cover the data section exactly, without holes or overlaps; the header is
// padded with spaces to a multiple of 8 bytes so that the data is aligned;
// the header may not exceed 100 MB.
//
// Sharded checkpoints (WriteSharded, ReadSharded) follow transformers'
// layout: model-00001-of-0000N.safetensors files plus
// model.safetensors.index.json mapping every tensor to its file.
package safetensors

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
)

// DType is a tensor element type, by safetensors' names.
type DType string

// The element types safetensors defines.
const (
	F64  DType = "F64"
	F32  DType = "F32"
	F16  DType = "F16"
	BF16 DType = "BF16"
	I64  DType = "I64"
	I32  DType = "I32"
	I16  DType = "I16"
	I8   DType = "I8"
	U64  DType = "U64"
	U32  DType = "U32"
	U16  DType = "U16"
	U8   DType = "U8"
	Bool DType = "BOOL"
)

// maxHeader is the limit safetensors puts on the JSON header.
const maxHeader = 100_000_000

// Size is the size of one element in bytes (0 for an unknown dtype).
func (d DType) Size() int {
	switch d {
	case F64, I64, U64:
		return 8
	case F32, I32, U32:
		return 4
	case F16, BF16, I16, U16:
		return 2
	case I8, U8, Bool:
		return 1
	}
	return 0
}

// Tensor is one named tensor: Data holds its elements little-endian,
// row-major, len(Data) = DType.Size() × the product of Shape.
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	Data  []byte
}

// Elements is the product of the shape (1 for a scalar).
func (t Tensor) Elements() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

func (t Tensor) check() error {
	if t.Name == "" {
		return errors.New("a tensor has an empty name")
	}
	if t.Name == "__metadata__" {
		return errors.New(`"__metadata__" cannot name a tensor`)
	}
	es := t.DType.Size()
	if es == 0 {
		return fmt.Errorf("tensor %q: unknown dtype %q", t.Name, t.DType)
	}
	for _, d := range t.Shape {
		if d < 0 {
			return fmt.Errorf("tensor %q: negative dimension in shape %v", t.Name, t.Shape)
		}
	}
	if want := t.Elements() * es; len(t.Data) != want {
		return fmt.Errorf("tensor %q: shape %v of %s needs %d bytes, the data has %d", t.Name, t.Shape, t.DType, want, len(t.Data))
	}
	return nil
}

type headerEntry struct {
	DType       DType    `json:"dtype"`
	Shape       []int    `json:"shape"`
	DataOffsets [2]int64 `json:"data_offsets"`
}

// header builds the padded JSON header for tensors, in the given order.
func header(tensors []Tensor, metadata map[string]string) ([]byte, error) {
	seen := make(map[string]bool, len(tensors))
	h := make(map[string]any, len(tensors)+1)
	var off int64
	for _, t := range tensors {
		if err := t.check(); err != nil {
			return nil, err
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("tensor name %q appears twice", t.Name)
		}
		seen[t.Name] = true
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		end := off + int64(len(t.Data))
		h[t.Name] = headerEntry{DType: t.DType, Shape: shape, DataOffsets: [2]int64{off, end}}
		off = end
	}
	if len(metadata) > 0 {
		h["__metadata__"] = metadata
	}
	b, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	if pad := (8 - len(b)%8) % 8; pad > 0 {
		b = append(b, bytes.Repeat([]byte{' '}, pad)...)
	}
	if len(b) > maxHeader {
		return nil, fmt.Errorf("the header would be %d bytes, more than safetensors' limit of %d", len(b), maxHeader)
	}
	return b, nil
}

// Encode writes tensors, in order, and metadata (may be nil) to w.
func Encode(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	h, err := header(tensors, metadata)
	if err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(h)))
	if _, err := w.Write(n[:]); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	if _, err := w.Write(h); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	for _, t := range tensors {
		if _, err := w.Write(t.Data); err != nil {
			return fmt.Errorf("safetensors: writing %q: %w", t.Name, err)
		}
	}
	return nil
}

// File is a decoded safetensors file.
type File struct {
	Tensors  []Tensor // in the order of their data
	Metadata map[string]string
}

// Tensor returns the tensor called name.
func (f *File) Tensor(name string) (Tensor, bool) {
	for _, t := range f.Tensors {
		if t.Name == name {
			return t, true
		}
	}
	return Tensor{}, false
}

// Decode parses a whole safetensors file held in memory; the tensors' Data
// alias b.
func Decode(b []byte) (*File, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("safetensors: %d bytes is too short for a header length", len(b))
	}
	n := binary.LittleEndian.Uint64(b[:8])
	if n > maxHeader {
		return nil, fmt.Errorf("safetensors: header length %d exceeds the limit of %d", n, maxHeader)
	}
	if n > uint64(len(b)-8) {
		return nil, fmt.Errorf("safetensors: header length %d runs past the end of the %d-byte file", n, len(b))
	}
	hb := b[8 : 8+n]
	if len(hb) == 0 || hb[0] != '{' {
		return nil, errors.New("safetensors: the header is not a JSON object")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(hb, &raw); err != nil {
		return nil, fmt.Errorf("safetensors: header: %w", err)
	}
	data := b[8+n:]
	f := &File{}
	type placed struct {
		t          Tensor
		begin, end int64
	}
	var ts []placed
	for name, v := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(v, &f.Metadata); err != nil {
				return nil, fmt.Errorf("safetensors: __metadata__ must map strings to strings: %w", err)
			}
			continue
		}
		var e headerEntry
		if err := json.Unmarshal(v, &e); err != nil {
			return nil, fmt.Errorf("safetensors: tensor %q: %w", name, err)
		}
		begin, end := e.DataOffsets[0], e.DataOffsets[1]
		if begin < 0 || end < begin || end > int64(len(data)) {
			return nil, fmt.Errorf("safetensors: tensor %q: data offsets [%d, %d) outside the %d-byte data section", name, begin, end, len(data))
		}
		t := Tensor{Name: name, DType: e.DType, Shape: e.Shape, Data: data[begin:end:end]}
		if err := t.check(); err != nil {
			return nil, fmt.Errorf("safetensors: %w", err)
		}
		ts = append(ts, placed{t, begin, end})
	}
	// The byte ranges must tile the data section (no holes, no overlaps).
	sort.SliceStable(ts, func(i, j int) bool {
		if ts[i].begin != ts[j].begin {
			return ts[i].begin < ts[j].begin
		}
		if ts[i].end != ts[j].end {
			return ts[i].end < ts[j].end
		}
		return ts[i].t.Name < ts[j].t.Name
	})
	var pos int64
	for _, p := range ts {
		if p.begin != pos {
			return nil, fmt.Errorf("safetensors: tensor %q starts at byte %d of the data, expected %d (holes or overlaps)", p.t.Name, p.begin, pos)
		}
		pos = p.end
		f.Tensors = append(f.Tensors, p.t)
	}
	if pos != int64(len(data)) {
		return nil, fmt.Errorf("safetensors: the tensors cover %d bytes of a %d-byte data section", pos, len(data))
	}
	return f, nil
}

// ReadFile reads and decodes the safetensors file at path.
func ReadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	f, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// WriteFile writes tensors to path durably and atomically: to a temporary
// file beside it, fsynced, then renamed over path.
func WriteFile(path string, tensors []Tensor, metadata map[string]string) error {
	return writeAtomic(path, func(w io.Writer) error { return Encode(w, tensors, metadata) })
}

func writeAtomic(path string, write func(io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	if err = write(bw); err != nil {
		return err
	}
	if err = bw.Flush(); err != nil {
		return fmt.Errorf("safetensors: writing %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("safetensors: syncing %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	if err = os.Chmod(f.Name(), 0o644); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	return nil
}

// FromFloat64s returns a tensor of F64 elements.
func FromFloat64s(name string, shape []int, v []float64) Tensor {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	return Tensor{Name: name, DType: F64, Shape: shape, Data: b}
}

// FromFloat32s returns a tensor of F32 elements.
func FromFloat32s(name string, shape []int, v []float32) Tensor {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return Tensor{Name: name, DType: F32, Shape: shape, Data: b}
}

// FromInt64s returns a tensor of I64 elements.
func FromInt64s(name string, shape []int, v []int64) Tensor {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return Tensor{Name: name, DType: I64, Shape: shape, Data: b}
}

// Float64s copies an F64 or F32 tensor's elements into dst (of the tensor's
// element count), converting F32 to float64.
func (t Tensor) Float64s(dst []float64) error {
	if len(dst) != t.Elements() {
		return fmt.Errorf("safetensors: tensor %q has %d elements, the destination %d", t.Name, t.Elements(), len(dst))
	}
	switch t.DType {
	case F64:
		for i := range dst {
			dst[i] = math.Float64frombits(binary.LittleEndian.Uint64(t.Data[8*i:]))
		}
	case F32:
		for i := range dst {
			dst[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:])))
		}
	default:
		return fmt.Errorf("safetensors: tensor %q is %s, not a float tensor", t.Name, t.DType)
	}
	return nil
}

// Float32s copies an F32 tensor's elements into dst (of the tensor's element
// count).
func (t Tensor) Float32s(dst []float32) error {
	if len(dst) != t.Elements() {
		return fmt.Errorf("safetensors: tensor %q has %d elements, the destination %d", t.Name, t.Elements(), len(dst))
	}
	if t.DType != F32 {
		return fmt.Errorf("safetensors: tensor %q is %s, not F32", t.Name, t.DType)
	}
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
	}
	return nil
}

// Int64s returns an I64 tensor's elements.
func (t Tensor) Int64s() ([]int64, error) {
	if t.DType != I64 {
		return nil, fmt.Errorf("safetensors: tensor %q is %s, not I64", t.Name, t.DType)
	}
	out := make([]int64, t.Elements())
	for i := range out {
		out[i] = int64(binary.LittleEndian.Uint64(t.Data[8*i:]))
	}
	return out, nil
}

// ShapeString formats a shape as Python does, e.g. "(32, 2)".
func ShapeString(shape []int) string {
	b := []byte{'('}
	for i, d := range shape {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = strconv.AppendInt(b, int64(d), 10)
	}
	if len(shape) == 1 {
		b = append(b, ',')
	}
	return string(append(b, ')'))
}
