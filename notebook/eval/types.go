package eval

import (
	"go/types"
	"reflect"
	"unsafe"
)

// basicTypes are the run-time types of Go's basic types.
var basicTypes = [...]reflect.Type{
	types.Bool:          reflect.TypeFor[bool](),
	types.Int:           reflect.TypeFor[int](),
	types.Int8:          reflect.TypeFor[int8](),
	types.Int16:         reflect.TypeFor[int16](),
	types.Int32:         reflect.TypeFor[int32](),
	types.Int64:         reflect.TypeFor[int64](),
	types.Uint:          reflect.TypeFor[uint](),
	types.Uint8:         reflect.TypeFor[uint8](),
	types.Uint16:        reflect.TypeFor[uint16](),
	types.Uint32:        reflect.TypeFor[uint32](),
	types.Uint64:        reflect.TypeFor[uint64](),
	types.Uintptr:       reflect.TypeFor[uintptr](),
	types.Float32:       reflect.TypeFor[float32](),
	types.Float64:       reflect.TypeFor[float64](),
	types.Complex64:     reflect.TypeFor[complex64](),
	types.Complex128:    reflect.TypeFor[complex128](),
	types.String:        reflect.TypeFor[string](),
	types.UnsafePointer: reflect.TypeFor[unsafe.Pointer](),
}

var (
	anyType   = reflect.TypeFor[any]()
	errorType = reflect.TypeFor[error]()
)

// rtype returns the run-time type of t, or fails the compilation: the
// type must be spelled by types the session or a linked package declares
// (reflect cannot make named types, nor struct types with unexported
// fields identical to the compiled ones).
func (c *compiler) rtype(t types.Type) reflect.Type {
	if rt, ok := c.types[t]; ok {
		return rt
	}
	rt := c.rtype1(t)
	c.types[t] = rt
	return rt
}

func (c *compiler) rtype1(t types.Type) reflect.Type {
	switch t := types.Unalias(t).(type) {
	case *types.Basic:
		if t.Info()&types.IsUntyped != 0 {
			switch t.Kind() {
			case types.UntypedBool:
				return basicTypes[types.Bool]
			case types.UntypedInt:
				return basicTypes[types.Int]
			case types.UntypedRune:
				return basicTypes[types.Int32]
			case types.UntypedFloat:
				return basicTypes[types.Float64]
			case types.UntypedComplex:
				return basicTypes[types.Complex128]
			case types.UntypedString:
				return basicTypes[types.String]
			}
			c.fail(nil, "untyped %s", t)
		}
		if int(t.Kind()) < len(basicTypes) && basicTypes[t.Kind()] != nil {
			return basicTypes[t.Kind()]
		}
	case *types.Pointer:
		return reflect.PointerTo(c.rtype(t.Elem()))
	case *types.Slice:
		return reflect.SliceOf(c.rtype(t.Elem()))
	case *types.Array:
		return reflect.ArrayOf(int(t.Len()), c.rtype(t.Elem()))
	case *types.Map:
		return reflect.MapOf(c.rtype(t.Key()), c.rtype(t.Elem()))
	case *types.Chan:
		dir := reflect.BothDir
		switch t.Dir() {
		case types.SendOnly:
			dir = reflect.SendDir
		case types.RecvOnly:
			dir = reflect.RecvDir
		}
		return reflect.ChanOf(dir, c.rtype(t.Elem()))
	case *types.Signature:
		if t.TypeParams().Len() > 0 || t.Recv() != nil {
			break
		}
		var in, out []reflect.Type
		for i := 0; i < t.Params().Len(); i++ {
			in = append(in, c.rtype(t.Params().At(i).Type()))
		}
		for i := 0; i < t.Results().Len(); i++ {
			out = append(out, c.rtype(t.Results().At(i).Type()))
		}
		return reflect.FuncOf(in, out, t.Variadic())
	case *types.Interface:
		if t.Empty() {
			return anyType
		}
	case *types.Named:
		return c.namedType(t)
	}
	c.fail(nil, "type %s has no run-time type the evaluator can reach", t)
	return nil
}

// namedType finds the run-time type of a named type: error, a session
// type, or a type of a linked package.
func (c *compiler) namedType(t *types.Named) reflect.Type {
	obj := t.Obj()
	if t.TypeArgs().Len() > 0 || t.TypeParams().Len() > 0 {
		c.fail(nil, "generic type %s", t)
	}
	if obj.Pkg() == nil {
		if obj.Name() == "error" {
			return errorType
		}
		c.fail(nil, "type %s", t)
	}
	if obj.Pkg() == c.cell.Pkg {
		e := c.cell.EntryOf(obj)
		if e == nil {
			c.fail(nil, "type %s is not a session type", t)
		}
		rt, ok := c.env.Type(e)
		if !ok {
			c.fail(nil, "session type %s has no run-time type", t)
		}
		return rt
	}
	v, ok := c.env.Package(obj.Pkg().Path())[obj.Name()]
	if !ok || v.Kind() != reflect.Pointer || !v.IsNil() {
		c.fail(nil, "type %s is not linked into the kernel", t)
	}
	rt := v.Type().Elem()
	if rt.Name() != obj.Name() || rt.PkgPath() != obj.Pkg().Path() {
		c.fail(nil, "type %s: the kernel's table has %v", t, rt)
	}
	return rt
}

// unsafePointer is the address of an addressable value.
func unsafePointer(v reflect.Value) unsafe.Pointer { return unsafe.Pointer(v.UnsafeAddr()) }
