package accelerate

import (
	"fmt"
	"strconv"

	"github.com/goaccel/goaccel/accelerate/checkpoint"
	"github.com/goaccel/goaccel/accelerate/ddp"
	"github.com/goaccel/goaccel/accelerate/safetensors"
)

// Named is optionally implemented by a model to name its parameters in the
// files SaveModel and SaveState write (nn.MLP names them as torch's
// nn.Sequential does: "0.weight", "0.bias", ...). Without it parameter i is
// "parameters.i". Buffers (ddp.Buffered) are "buffers.i".
type Named interface {
	ParameterNames() []string
}

// Reloadable is optionally implemented by a model whose parameter buffers
// are copies of where its parameters live (a GoMLX context's variables, a
// device's memory): LoadState and LoadModel call ParametersLoaded after
// writing the loaded values into the buffers Parameters (Parameters32)
// returned, so that the model takes them.
type Reloadable interface {
	ParametersLoaded() error
}

// modelView is a model's tensors: live parameter (and buffer) buffers with
// their names, shapes and element type.
type modelView struct {
	module any // the model (a *ddp.DDP's module)
	dtype  safetensors.DType
	names  []string
	shapes [][]int
	f64    [][]float64
	f32    [][]float32
}

// layoutOf is a model's checkpoint layout (dtype, names, shapes) read
// without its values, for a model that names and shapes its parameters
// (Named, ddp.Shaped) and has no buffers; otherwise viewOf's.
func layoutOf(model any) (checkpoint.Model, error) {
	n, named := model.(Named)
	s, shaped := model.(ddp.Shaped)
	_, b64 := model.(ddp.Buffered)
	_, b32 := model.(ddp.Buffered32)
	if !named || !shaped || b64 || b32 {
		v, err := viewOf(model)
		if err != nil {
			return checkpoint.Model{}, err
		}
		return checkpoint.Model{DType: string(v.dtype), Names: v.names, Shapes: v.shapes}, nil
	}
	dtype := safetensors.F64
	if _, ok := model.(ddp.Model32); ok {
		dtype = safetensors.F32
	}
	names, shapes := n.ParameterNames(), s.Shapes()
	if len(names) != len(shapes) {
		return checkpoint.Model{}, fmt.Errorf("%T: ParameterNames gives %d names for %d shapes", model, len(names), len(shapes))
	}
	return checkpoint.Model{DType: string(dtype), Names: names, Shapes: shapes}, nil
}

func viewOf(model any) (*modelView, error) {
	if d, ok := model.(*ddp.DDP); ok && d != nil {
		model = d.Module()
	}
	v := &modelView{module: model}
	var sizes []int
	switch m := model.(type) {
	case ddp.Model:
		v.dtype, v.f64 = safetensors.F64, m.Parameters()
		for _, p := range v.f64 {
			sizes = append(sizes, len(p))
		}
	case ddp.Model32:
		v.dtype, v.f32 = safetensors.F32, m.Parameters32()
		for _, p := range v.f32 {
			sizes = append(sizes, len(p))
		}
	default:
		return nil, fmt.Errorf("%T is not a model: it needs Parameters()/Gradients() [][]float64 (ddp.Model) or Parameters32()/Gradients32() [][]float32 (ddp.Model32)", model)
	}
	if n, ok := model.(Named); ok {
		v.names = n.ParameterNames()
		if len(v.names) != len(sizes) {
			return nil, fmt.Errorf("%T: ParameterNames gives %d names for %d parameters", model, len(v.names), len(sizes))
		}
	} else {
		for i := range sizes {
			v.names = append(v.names, "parameters."+strconv.Itoa(i))
		}
	}
	if s, ok := model.(ddp.Shaped); ok {
		v.shapes = s.Shapes()
		if len(v.shapes) != len(sizes) {
			return nil, fmt.Errorf("%T: Shapes gives %d shapes for %d parameters", model, len(v.shapes), len(sizes))
		}
		for i, sh := range v.shapes {
			n := 1
			for _, d := range sh {
				n *= d
			}
			if n != sizes[i] {
				return nil, fmt.Errorf("%T: parameter %q: shape %v has %d elements, the buffer %d", model, v.names[i], sh, n, sizes[i])
			}
		}
	} else {
		for _, n := range sizes {
			v.shapes = append(v.shapes, []int{n})
		}
	}
	switch b := model.(type) {
	case ddp.Buffered:
		if v.dtype == safetensors.F64 {
			for i, buf := range b.Buffers() {
				v.f64 = append(v.f64, buf)
				v.names = append(v.names, "buffers."+strconv.Itoa(i))
				v.shapes = append(v.shapes, []int{len(buf)})
			}
		}
	case ddp.Buffered32:
		if v.dtype == safetensors.F32 {
			for i, buf := range b.Buffers32() {
				v.f32 = append(v.f32, buf)
				v.names = append(v.names, "buffers."+strconv.Itoa(i))
				v.shapes = append(v.shapes, []int{len(buf)})
			}
		}
	}
	seen := map[string]bool{}
	for _, n := range v.names {
		if n == "" || seen[n] {
			return nil, fmt.Errorf("%T: parameter name %q is empty or repeated", model, n)
		}
		seen[n] = true
	}
	return v, nil
}

// tensors copies the model's tensors out as safetensors tensors.
func (v *modelView) tensors() []safetensors.Tensor {
	out := make([]safetensors.Tensor, len(v.names))
	for i, name := range v.names {
		if v.f64 != nil {
			out[i] = safetensors.FromFloat64s(name, v.shapes[i], v.f64[i])
		} else {
			out[i] = safetensors.FromFloat32s(name, v.shapes[i], v.f32[i])
		}
	}
	return out
}

// check compares tensors with the model: the same names, shapes and (when
// exactDType) element types. The error names the first difference.
func (v *modelView) check(tensors []safetensors.Tensor, exactDType bool) (map[string]safetensors.Tensor, error) {
	by := make(map[string]safetensors.Tensor, len(tensors))
	for _, t := range tensors {
		by[t.Name] = t
	}
	for i, name := range v.names {
		t, ok := by[name]
		if !ok {
			return nil, fmt.Errorf("the model's parameter %q is missing from the file (it holds %s)", name, namesOf(tensors))
		}
		if !sameShape(t.Shape, v.shapes[i]) {
			return nil, fmt.Errorf("parameter %q has shape %s in the file, %s in the model", name, safetensors.ShapeString(t.Shape), safetensors.ShapeString(v.shapes[i]))
		}
		if t.DType != v.dtype && (exactDType || (t.DType != safetensors.F32 && t.DType != safetensors.F64)) {
			return nil, fmt.Errorf("parameter %q is %s in the file, the model's is %s", name, t.DType, v.dtype)
		}
	}
	if len(by) != len(v.names) {
		have := map[string]bool{}
		for _, n := range v.names {
			have[n] = true
		}
		for _, t := range tensors {
			if !have[t.Name] {
				return nil, fmt.Errorf("the file holds %q, which the model does not have (the model has %d tensors, the file %d)", t.Name, len(v.names), len(by))
			}
		}
	}
	return by, nil
}

// load copies checked tensors into the model's live buffers.
func (v *modelView) load(by map[string]safetensors.Tensor) error {
	for i, name := range v.names {
		t := by[name]
		var err error
		if v.f64 != nil {
			err = t.Float64s(v.f64[i])
		} else if t.DType == safetensors.F32 {
			err = t.Float32s(v.f32[i])
		} else {
			tmp := make([]float64, len(v.f32[i]))
			if err = t.Float64s(tmp); err == nil {
				for j, x := range tmp {
					v.f32[i][j] = float32(x)
				}
			}
		}
		if err != nil {
			return err
		}
	}
	if r, ok := v.module.(Reloadable); ok {
		return r.ParametersLoaded()
	}
	return nil
}

func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func namesOf(ts []safetensors.Tensor) string {
	s := "["
	for i, t := range ts {
		if i == 8 {
			s += fmt.Sprintf(" ... %d more", len(ts)-8)
			break
		}
		if i > 0 {
			s += " "
		}
		s += strconv.Quote(t.Name)
	}
	return s + "]"
}

// SaveModel is Accelerate's save_model: the main process writes the
// model's parameters (and buffers) into dir as safetensors that any
// framework reads — model.safetensors, or, above maxShardSize bytes (<= 0:
// Accelerate's default "10GB"), model-00001-of-0000N.safetensors shards
// with model.safetensors.index.json, as transformers names them. Shapes
// come from ddp.Shaped, names from Named; the metadata is {"format": "pt"}
// as Accelerate writes. Each file is written atomically; shards of an
// earlier save in dir are removed. The other processes write nothing.
// model is what Prepare returned or the model itself.
func (a *Accelerator) SaveModel(model any, dir string, maxShardSize int64) error {
	v, err := viewOf(model)
	if err != nil {
		return fmt.Errorf("accelerate: SaveModel: %w", err)
	}
	if !a.IsMainProcess() {
		return nil
	}
	if dir == "" {
		return fmt.Errorf("accelerate: SaveModel: no directory given")
	}
	if _, err := safetensors.WriteSharded(dir, v.tensors(), map[string]string{"format": "pt"}, maxShardSize); err != nil {
		return fmt.Errorf("accelerate: SaveModel: %w", err)
	}
	return nil
}

// LoadModel reads what SaveModel (or transformers, or Python's safetensors)
// wrote in dir — model.safetensors or the shards its index lists — into
// model's parameters. Every parameter of the model must be in the files
// with the same shape, and the files may hold nothing else; F32 and F64
// tensors convert to the model's type. The error names the first
// difference.
func LoadModel(model any, dir string) error {
	v, err := viewOf(model)
	if err != nil {
		return fmt.Errorf("accelerate: LoadModel: %w", err)
	}
	ts, _, err := safetensors.ReadSharded(dir)
	if err != nil {
		return fmt.Errorf("accelerate: LoadModel: %w", err)
	}
	by, err := v.check(ts, false)
	if err != nil {
		return fmt.Errorf("accelerate: LoadModel %s: %w", dir, err)
	}
	if err := v.load(by); err != nil {
		return fmt.Errorf("accelerate: LoadModel: %w", err)
	}
	return nil
}
