package export

import (
	"fmt"
	"go/types"
	"strconv"
	"strings"
)

// typeOf spells t in the program (package names and the notebook's types
// as the program calls them, decided at rendering), or says why it cannot
// be spelled: a type of another package that it does not export, or one
// declared inside a function.
func (x *exporter) typeOf(t types.Type) (func() string, error) {
	w := &typeWriter{x: x}
	if err := w.write(t); err != nil {
		return nil, err
	}
	w.flush()
	parts := w.parts
	return func() string { return join(parts, "") }, nil
}

type typeWriter struct {
	x     *exporter
	parts []func() string
	buf   strings.Builder
}

func (w *typeWriter) str(s string) { w.buf.WriteString(s) }

func (w *typeWriter) flush() {
	if w.buf.Len() > 0 {
		s := w.buf.String()
		w.parts = append(w.parts, func() string { return s })
		w.buf.Reset()
	}
}

func (w *typeWriter) later(f func() string) {
	w.flush()
	w.parts = append(w.parts, f)
}

func (w *typeWriter) pkg(path string) {
	w.later(func() string { return w.x.importName(path) })
	w.str(".")
}

func (w *typeWriter) write(t types.Type) error {
	switch t := t.(type) {
	case *types.Basic:
		if t.Kind() == types.UnsafePointer {
			w.pkg("unsafe")
			w.str("Pointer")
			return nil
		}
		if t.Info()&types.IsUntyped != 0 {
			return w.write(types.Default(t))
		}
		w.str(t.Name())
	case *types.Pointer:
		w.str("*")
		return w.write(t.Elem())
	case *types.Slice:
		w.str("[]")
		return w.write(t.Elem())
	case *types.Array:
		w.str("[" + strconv.FormatInt(t.Len(), 10) + "]")
		return w.write(t.Elem())
	case *types.Map:
		w.str("map[")
		if err := w.write(t.Key()); err != nil {
			return err
		}
		w.str("]")
		return w.write(t.Elem())
	case *types.Chan:
		switch t.Dir() {
		case types.SendOnly:
			w.str("chan<- ")
		case types.RecvOnly:
			w.str("<-chan ")
		default:
			w.str("chan ")
			if c, ok := t.Elem().(*types.Chan); ok && c.Dir() == types.RecvOnly {
				w.str("(")
				defer w.str(")")
			}
		}
		return w.write(t.Elem())
	case *types.Signature:
		w.str("func")
		return w.signature(t)
	case *types.Struct:
		w.str("struct{")
		for i := 0; i < t.NumFields(); i++ {
			f := t.Field(i)
			if i > 0 {
				w.str("; ")
			}
			if !f.Exported() && f.Pkg() != nil && f.Pkg().Path() != "main" {
				return fmt.Errorf("its struct type has the unexported field %s of package %s", f.Name(), f.Pkg().Path())
			}
			if !f.Embedded() {
				w.str(f.Name() + " ")
			}
			if err := w.write(f.Type()); err != nil {
				return err
			}
			if tag := t.Tag(i); tag != "" {
				w.str(" " + strconv.Quote(tag))
			}
		}
		w.str("}")
	case *types.Interface:
		if t.Empty() {
			w.str("any")
			return nil
		}
		w.str("interface{")
		first := true
		for i := 0; i < t.NumEmbeddeds(); i++ {
			if !first {
				w.str("; ")
			}
			first = false
			if err := w.write(t.EmbeddedType(i)); err != nil {
				return err
			}
		}
		for i := 0; i < t.NumExplicitMethods(); i++ {
			m := t.ExplicitMethod(i)
			if !m.Exported() && m.Pkg() != nil && m.Pkg().Path() != "main" {
				return fmt.Errorf("its interface type has the unexported method %s of package %s", m.Name(), m.Pkg().Path())
			}
			if !first {
				w.str("; ")
			}
			first = false
			w.str(m.Name())
			if err := w.signature(m.Type().(*types.Signature)); err != nil {
				return err
			}
		}
		w.str("}")
	case *types.Alias:
		obj := t.Obj()
		if obj.Pkg() != nil && obj.Pkg().Path() != "main" && obj.Exported() {
			w.x.pkgNames[obj.Pkg().Path()] = obj.Pkg().Name()
			w.pkg(obj.Pkg().Path())
			w.str(obj.Name())
			return w.typeArgs(t.TypeArgs())
		}
		return w.write(types.Unalias(t))
	case *types.Named:
		obj := t.Obj()
		switch {
		case obj.Pkg() == nil:
			w.str(obj.Name()) // error, comparable
		case obj.Pkg().Path() == "main":
			e := w.x.s.EntryOf(obj)
			sym := w.x.syms[e]
			if sym == nil {
				return fmt.Errorf("type %s is declared inside a function", obj.Name())
			}
			w.later(func() string { return sym.name })
		case !obj.Exported():
			return fmt.Errorf("type %s.%s is not exported by its package", obj.Pkg().Name(), obj.Name())
		default:
			w.x.pkgNames[obj.Pkg().Path()] = obj.Pkg().Name()
			w.pkg(obj.Pkg().Path())
			w.str(obj.Name())
		}
		return w.typeArgs(t.TypeArgs())
	case *types.TypeParam:
		return fmt.Errorf("type parameter %s", t.Obj().Name())
	default:
		return fmt.Errorf("type %s cannot be written", t)
	}
	return nil
}

func (w *typeWriter) typeArgs(list *types.TypeList) error {
	if list.Len() == 0 {
		return nil
	}
	w.str("[")
	for i := 0; i < list.Len(); i++ {
		if i > 0 {
			w.str(", ")
		}
		if err := w.write(list.At(i)); err != nil {
			return err
		}
	}
	w.str("]")
	return nil
}

func (w *typeWriter) signature(sig *types.Signature) error {
	if err := w.tuple(sig.Params(), sig.Variadic()); err != nil {
		return err
	}
	res := sig.Results()
	switch res.Len() {
	case 0:
		return nil
	case 1:
		w.str(" ")
		return w.write(res.At(0).Type())
	}
	w.str(" ")
	return w.tuple(res, false)
}

func (w *typeWriter) tuple(t *types.Tuple, variadic bool) error {
	w.str("(")
	for i := 0; i < t.Len(); i++ {
		if i > 0 {
			w.str(", ")
		}
		typ := t.At(i).Type()
		if variadic && i == t.Len()-1 {
			w.str("...")
			typ = typ.(*types.Slice).Elem()
		}
		if err := w.write(typ); err != nil {
			return err
		}
	}
	w.str(")")
	return nil
}
