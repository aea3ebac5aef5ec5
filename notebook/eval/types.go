package eval

import (
	"fmt"
	"go/types"
	"reflect"
	"strings"
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

// rtype returns the run-time type of t, or fails the compilation. The type
// must be one compiled code has: a named type of the session or of a
// linked package, a basic type, or a composite of those that a loaded
// module (the kernel, a cell's plugin) already declares. Types reflect
// would make up (reflect.SliceOf and the like, when no module has the
// type) are not used: a plugin loaded later would bring its own descriptor
// of the same type, and Go would then hold them for different types (a
// type assertion in compiled code would fail on a value the evaluator
// made), and reflect would keep handing out its own.
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
		e := c.rtype(t.Elem())
		return c.known(t, "*"+e.String(), func(x reflect.Type) bool { return x.Kind() == reflect.Pointer && x.Elem() == e })
	case *types.Slice:
		e := c.rtype(t.Elem())
		return c.known(t, "[]"+e.String(), func(x reflect.Type) bool { return x.Kind() == reflect.Slice && x.Elem() == e })
	case *types.Array:
		e := c.rtype(t.Elem())
		return c.known(t, fmt.Sprintf("[%d]%s", t.Len(), e), func(x reflect.Type) bool {
			return x.Kind() == reflect.Array && x.Len() == int(t.Len()) && x.Elem() == e
		})
	case *types.Map:
		k, e := c.rtype(t.Key()), c.rtype(t.Elem())
		return c.known(t, "map["+k.String()+"]"+e.String(), func(x reflect.Type) bool {
			return x.Kind() == reflect.Map && x.Key() == k && x.Elem() == e
		})
	case *types.Chan:
		e := c.rtype(t.Elem())
		dir, prefix := reflect.BothDir, "chan "
		switch t.Dir() {
		case types.SendOnly:
			dir, prefix = reflect.SendDir, "chan<- "
		case types.RecvOnly:
			dir, prefix = reflect.RecvDir, "<-chan "
		}
		return c.known(t, prefix+e.String(), func(x reflect.Type) bool {
			return x.Kind() == reflect.Chan && x.ChanDir() == dir && x.Elem() == e
		})
	case *types.Signature:
		if t.TypeParams().Len() > 0 || t.Recv() != nil {
			break
		}
		in := make([]reflect.Type, t.Params().Len())
		var names []string
		for i := range in {
			in[i] = c.rtype(t.Params().At(i).Type())
			n := in[i].String()
			if t.Variadic() && i == len(in)-1 {
				n = "..." + in[i].Elem().String()
			}
			names = append(names, n)
		}
		out := make([]reflect.Type, t.Results().Len())
		var outs []string
		for i := range out {
			out[i] = c.rtype(t.Results().At(i).Type())
			outs = append(outs, out[i].String())
		}
		str := "func(" + strings.Join(names, ", ") + ")"
		switch len(outs) {
		case 0:
		case 1:
			str += " " + outs[0]
		default:
			str += " (" + strings.Join(outs, ", ") + ")"
		}
		return c.known(t, str, func(x reflect.Type) bool {
			if x.Kind() != reflect.Func || x.NumIn() != len(in) || x.NumOut() != len(out) || x.IsVariadic() != t.Variadic() {
				return false
			}
			for i, p := range in {
				if x.In(i) != p {
					return false
				}
			}
			for i, r := range out {
				if x.Out(i) != r {
					return false
				}
			}
			return true
		})
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

// typesByString returns the type descriptors (*abi.Type) of the loaded
// modules whose string is s. (Kept for linkname by reflect, go.dev/issue/67401.)
//
//go:linkname typesByString reflect.typesByString
func typesByString(s string) []unsafe.Pointer

// typeOf turns a type descriptor into its reflect.Type: every
// reflect.Type is a *reflect.rtype, which is the descriptor.
func typeOf(p unsafe.Pointer) reflect.Type {
	t := reflect.TypeFor[int]()
	(*[2]unsafe.Pointer)(unsafe.Pointer(&t))[1] = p
	return t
}

// known returns the type with string s that a loaded module declares and
// match accepts, or fails the compilation.
func (c *compiler) known(t types.Type, s string, match func(reflect.Type) bool) reflect.Type {
	for _, p := range typesByString(s) {
		if rt := typeOf(p); match(rt) {
			return rt
		}
	}
	c.fail(nil, "type %s is not in compiled code yet", t)
	return nil
}

// newable fails the compilation unless reflect.New(rt) (and Addr of its
// values) would use a *T that compiled code declares.
func (c *compiler) newable(rt reflect.Type) {
	if c.pointers[rt] {
		return
	}
	for _, p := range typesByString("*" + rt.String()) {
		if pt := typeOf(p); pt.Kind() == reflect.Pointer && pt.Elem() == rt {
			c.pointers[rt] = true
			return
		}
	}
	c.fail(nil, "type *%v is not in compiled code yet", rt)
}

// unsafePointer is the address of an addressable value.
func unsafePointer(v reflect.Value) unsafe.Pointer { return unsafe.Pointer(v.UnsafeAddr()) }
