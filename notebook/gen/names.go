package gen

import (
	"fmt"
	"go/types"
	"sort"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/notebook/check"
)

// imports are the generated file's imports beyond the cell's own.
type imports struct {
	byPath map[string]string // import path → local name in the file
	extra  map[string]string // added imports: local name → path
	used   map[string]bool   // local names generated code uses
	n      int
}

func newImports(c *check.Cell) *imports {
	im := &imports{byPath: map[string]string{}, extra: map[string]string{}, used: map[string]bool{}}
	for _, is := range c.File.Imports {
		path, _ := strconv.Unquote(is.Path.Value)
		name := ""
		if is.Name != nil {
			name = is.Name.Name
		} else if obj, ok := c.Info.Implicits[is].(*types.PkgName); ok {
			name = obj.Name()
		}
		if name == "" || name == "_" || name == "." {
			continue
		}
		if _, ok := im.byPath[path]; !ok {
			im.byPath[path] = name
		}
	}
	return im
}

// name returns the file's local name for path, adding an import (named
// after hint) when the file has none.
func (im *imports) name(path, hint string) string {
	if n, ok := im.byPath[path]; ok {
		im.used[n] = true
		return n
	}
	im.n++
	local := fmt.Sprintf("_gxi%d_%s", im.n, sanitize(hint))
	im.byPath[path] = local
	im.extra[local] = path
	return local
}

// add adds a named import and returns its name.
func (im *imports) add(local, path string) string {
	if n, ok := im.byPath[path]; ok && strings.HasPrefix(n, "_gx") {
		return n
	}
	im.byPath[path] = local
	im.extra[local] = path
	return local
}

func (im *imports) specs() string {
	names := make([]string, 0, len(im.extra))
	for n := range im.extra {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "\t%s %q\n", n, im.extra[n])
	}
	return b.String()
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// typeText spells t in the generated package.
func (g *gen) typeText(t types.Type) (string, error) {
	var b strings.Builder
	if err := g.writeType(&b, t); err != nil {
		return "", err
	}
	return b.String(), nil
}

func (g *gen) writeType(b *strings.Builder, t types.Type) error {
	switch t := t.(type) {
	case *types.Basic:
		switch {
		case t.Kind() == types.UnsafePointer:
			b.WriteString(g.imp.name("unsafe", "unsafe") + ".Pointer")
		case t.Info()&types.IsUntyped != 0:
			return fmt.Errorf("an untyped value has no type to write")
		default:
			b.WriteString(t.Name())
		}
	case *types.Pointer:
		b.WriteString("*")
		return g.writeType(b, t.Elem())
	case *types.Slice:
		b.WriteString("[]")
		return g.writeType(b, t.Elem())
	case *types.Array:
		fmt.Fprintf(b, "[%d]", t.Len())
		return g.writeType(b, t.Elem())
	case *types.Map:
		b.WriteString("map[")
		if err := g.writeType(b, t.Key()); err != nil {
			return err
		}
		b.WriteString("]")
		return g.writeType(b, t.Elem())
	case *types.Chan:
		switch t.Dir() {
		case types.SendRecv:
			b.WriteString("chan ")
			if c, ok := t.Elem().(*types.Chan); ok && c.Dir() == types.RecvOnly {
				b.WriteString("(")
				defer b.WriteString(")")
			}
		case types.SendOnly:
			b.WriteString("chan<- ")
		default:
			b.WriteString("<-chan ")
		}
		return g.writeType(b, t.Elem())
	case *types.Signature:
		b.WriteString("func")
		return g.writeSignature(b, t, nil)
	case *types.Struct:
		if home, ok := g.foreignStruct(t); ok && !hasTypeParam(t) {
			b.WriteString(g.pkg(home) + "." + structAlias(t))
			return nil
		}
		b.WriteString("struct{")
		for i := 0; i < t.NumFields(); i++ {
			f := t.Field(i)
			if i > 0 {
				b.WriteString("; ")
			}
			if !f.Embedded() {
				b.WriteString(g.fieldName(f) + " ")
			}
			if err := g.writeType(b, f.Type()); err != nil {
				return err
			}
			if tag := t.Tag(i); tag != "" {
				b.WriteString(" " + strconv.Quote(tag))
			}
		}
		b.WriteString("}")
	case *types.Interface:
		b.WriteString("interface{")
		n := 0
		for i := 0; i < t.NumEmbeddeds(); i++ {
			if n > 0 {
				b.WriteString("; ")
			}
			n++
			if err := g.writeType(b, t.EmbeddedType(i)); err != nil {
				return err
			}
		}
		for i := 0; i < t.NumExplicitMethods(); i++ {
			m := t.ExplicitMethod(i)
			if n > 0 {
				b.WriteString("; ")
			}
			n++
			b.WriteString(g.methodName(m))
			if err := g.writeSignature(b, m.Type().(*types.Signature), nil); err != nil {
				return err
			}
		}
		b.WriteString("}")
	case *types.Union:
		for i := 0; i < t.Len(); i++ {
			if i > 0 {
				b.WriteString(" | ")
			}
			if t.Term(i).Tilde() {
				b.WriteString("~")
			}
			if err := g.writeType(b, t.Term(i).Type()); err != nil {
				return err
			}
		}
	case *types.Named:
		if err := g.writeTypeName(b, t.Obj()); err != nil {
			return err
		}
		return g.writeTypeArgs(b, t.TypeArgs())
	case *types.Alias:
		if t.Obj().Pkg() == nil {
			b.WriteString(t.Obj().Name())
			return nil
		}
		if t.TypeArgs().Len() > 0 || t.Obj().Pkg() != g.c.Pkg {
			return g.writeType(b, types.Unalias(t))
		}
		return g.writeTypeName(b, t.Obj())
	case *types.TypeParam:
		b.WriteString(t.Obj().Name())
	default:
		return fmt.Errorf("cannot write type %s", t)
	}
	return nil
}

func (g *gen) writeTypeArgs(b *strings.Builder, args *types.TypeList) error {
	if args.Len() == 0 {
		return nil
	}
	b.WriteString("[")
	for i := 0; i < args.Len(); i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		if err := g.writeType(b, args.At(i)); err != nil {
			return err
		}
	}
	b.WriteString("]")
	return nil
}

// writeSignature writes (params) results; names, when given, name the
// parameters.
func (g *gen) writeSignature(b *strings.Builder, sig *types.Signature, names []string) error {
	b.WriteString("(")
	for i := 0; i < sig.Params().Len(); i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		if names != nil {
			b.WriteString(names[i] + " ")
		}
		t := sig.Params().At(i).Type()
		if sig.Variadic() && i == sig.Params().Len()-1 {
			b.WriteString("...")
			t = t.(*types.Slice).Elem()
		}
		if err := g.writeType(b, t); err != nil {
			return err
		}
	}
	b.WriteString(")")
	if n := sig.Results().Len(); n > 0 {
		b.WriteString(" (")
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			if err := g.writeType(b, sig.Results().At(i).Type()); err != nil {
				return err
			}
		}
		b.WriteString(")")
	}
	return nil
}

// writeTypeName writes the name of a declared type as the generated package
// reaches it.
func (g *gen) writeTypeName(b *strings.Builder, obj *types.TypeName) error {
	pkg := obj.Pkg()
	switch {
	case pkg == nil:
		b.WriteString(obj.Name())
		return nil
	case pkg != g.c.Pkg:
		if !obj.Exported() {
			return fmt.Errorf("type %s is not exported by package %s", obj.Name(), pkg.Path())
		}
		b.WriteString(g.imp.name(pkg.Path(), pkg.Name()) + "." + obj.Name())
		return nil
	}
	if g.own(obj) {
		b.WriteString(obj.Name())
		return nil
	}
	e := g.c.EntryOf(obj)
	if e == nil {
		return fmt.Errorf("type %s is declared inside a function", obj.Name())
	}
	b.WriteString(g.useType(e, obj))
	return nil
}

// fieldName is the name a struct field has in generated code.
func (g *gen) fieldName(f *types.Var) string { return f.Name() }
