package accelerate

import (
	"encoding/json"
	"fmt"
	"strings"
	"unsafe"

	"github.com/goaccel/goaccel/accelerate/pg"
)

// WaitForEveryone blocks until every process reaches it (a barrier). In a
// single process it returns at once.
func (a *Accelerator) WaitForEveryone() error {
	g, err := a.st.groupFor("WaitForEveryone")
	if err != nil || g == nil {
		return err
	}
	return g.Barrier(a.st.ctx)
}

func parseOp(op string) (pg.ReduceOp, error) {
	if strings.TrimSpace(op) == "" {
		return pg.Mean, nil // Accelerate's reduce defaults to "mean"
	}
	r, err := pg.ParseReduceOp(op)
	if err != nil {
		return 0, fmt.Errorf("accelerate: %w", err)
	}
	return r, nil
}

// AllReduceFloat32 reduces buf across processes in place with op ("sum",
// "mean", "max", "min"; "" = "mean"). Every process ends with the same
// values; every process must pass a buffer of the same length.
func (a *Accelerator) AllReduceFloat32(buf []float32, op string) error {
	rop, err := parseOp(op)
	if err != nil {
		return err
	}
	g, err := a.st.groupFor("AllReduceFloat32")
	if err != nil || g == nil {
		return err
	}
	return g.AllReduceFloat32(a.st.ctx, buf, rop)
}

// AllReduceFloat64 is AllReduceFloat32 for float64.
func (a *Accelerator) AllReduceFloat64(buf []float64, op string) error {
	rop, err := parseOp(op)
	if err != nil {
		return err
	}
	g, err := a.st.groupFor("AllReduceFloat64")
	if err != nil || g == nil {
		return err
	}
	return g.AllReduceFloat64(a.st.ctx, buf, rop)
}

// Reduce returns values reduced across processes with op ("sum", "mean",
// "max", "min"; "" = "mean", Accelerate's default), on every process;
// values itself is not modified.
func (a *Accelerator) Reduce(values []float64, op string) ([]float64, error) {
	out := append([]float64(nil), values...)
	if err := a.AllReduceFloat64(out, op); err != nil {
		return nil, err
	}
	return out, nil
}

// ReduceFloat32s is Reduce for float32.
func (a *Accelerator) ReduceFloat32s(values []float32, op string) ([]float32, error) {
	out := append([]float32(nil), values...)
	if err := a.AllReduceFloat32(out, op); err != nil {
		return nil, err
	}
	return out, nil
}

// GatherBytes returns every process's data, indexed by process, on every
// process.
func (a *Accelerator) GatherBytes(data []byte) ([][]byte, error) {
	g, err := a.st.groupFor("GatherBytes")
	if err != nil {
		return nil, err
	}
	if g == nil {
		return [][]byte{data}, nil
	}
	return g.AllGather(a.st.ctx, data)
}

// GatherFloat64s concatenates every process's values in process order, on
// every process (Accelerate's gather). Lengths may differ between processes.
func (a *Accelerator) GatherFloat64s(values []float64) ([]float64, error) {
	return gatherFloats(a, values)
}

// GatherFloat32s is GatherFloat64s for float32.
func (a *Accelerator) GatherFloat32s(values []float32) ([]float32, error) {
	return gatherFloats(a, values)
}

func gatherFloats[T float32 | float64](a *Accelerator, values []T) ([]T, error) {
	var x T
	size := int(unsafe.Sizeof(x))
	var raw []byte
	if len(values) > 0 {
		raw = unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(values))), len(values)*size)
	}
	parts, err := a.GatherBytes(raw)
	if err != nil {
		return nil, err
	}
	total := 0
	for _, p := range parts {
		total += len(p) / size
	}
	out := make([]T, total)
	if total > 0 {
		dst := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(out))), total*size)
		off := 0
		for _, p := range parts { // the group checked that byte orders agree
			off += copy(dst[off:], p)
		}
	}
	return out, nil
}

// GatherObject JSON-encodes v on every process and returns all of them,
// indexed by process, on every process (Accelerate's gather_object, without
// its flattening of lists). Values decode as JSON generic values
// (float64, string, bool, []any, map[string]any); use GatherObjectInto to
// decode into a typed slice.
func (a *Accelerator) GatherObject(v any) ([]any, error) {
	var out []any
	if err := a.GatherObjectInto(v, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// GatherObjectInto JSON-encodes v on every process and decodes the values
// of all processes, in process order, into out, a pointer to a slice (for
// example *[]Metrics).
func (a *Accelerator) GatherObjectInto(v any, out any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("accelerate: GatherObject: encoding %T: %w", v, err)
	}
	parts, err := a.GatherBytes(b)
	if err != nil {
		return err
	}
	arr := make([]byte, 0, len(parts)*(len(b)+1)+2)
	arr = append(arr, '[')
	for i, p := range parts {
		if i > 0 {
			arr = append(arr, ',')
		}
		arr = append(arr, p...)
	}
	arr = append(arr, ']')
	if err := json.Unmarshal(arr, out); err != nil {
		return fmt.Errorf("accelerate: GatherObject: decoding into %T: %w", out, err)
	}
	return nil
}

// BroadcastFloat64s overwrites buf on every process with the values of
// process root. Every process must pass a buffer of the same length.
func (a *Accelerator) BroadcastFloat64s(buf []float64, root int) error {
	g, err := a.bcastGroup("BroadcastFloat64s", root)
	if err != nil || g == nil {
		return err
	}
	return g.BroadcastFloat64(a.st.ctx, buf, root)
}

// BroadcastFloat32s is BroadcastFloat64s for float32.
func (a *Accelerator) BroadcastFloat32s(buf []float32, root int) error {
	g, err := a.bcastGroup("BroadcastFloat32s", root)
	if err != nil || g == nil {
		return err
	}
	return g.BroadcastFloat32(a.st.ctx, buf, root)
}

// BroadcastObject sends the value ptr points to on process root to every
// other process, JSON-encoded, and decodes it into their ptr (Accelerate's
// broadcast_object_list). ptr must be a non-nil pointer on every process.
func (a *Accelerator) BroadcastObject(ptr any, root int) error {
	g, err := a.bcastGroup("BroadcastObject", root)
	if err != nil || g == nil {
		return err
	}
	var b []byte
	if a.ProcessIndex() == root {
		if b, err = json.Marshal(ptr); err != nil {
			return fmt.Errorf("accelerate: BroadcastObject: encoding %T: %w", ptr, err)
		}
	}
	b, err = g.BroadcastBytes(a.st.ctx, b, root)
	if err != nil || a.ProcessIndex() == root {
		return err
	}
	if err := json.Unmarshal(b, ptr); err != nil {
		return fmt.Errorf("accelerate: BroadcastObject: decoding into %T: %w", ptr, err)
	}
	return nil
}

func (a *Accelerator) bcastGroup(op string, root int) (*pg.Group, error) {
	if root < 0 || root >= a.NumProcesses() {
		return nil, fmt.Errorf("accelerate: %s: root %d out of range for %d processes", op, root, a.NumProcesses())
	}
	return a.st.groupFor(op)
}
