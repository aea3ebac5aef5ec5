package gen

import (
	"crypto/sha256"
	"encoding/hex"
	"go/ast"
	"go/types"
	"slices"
)

// Struct types without a name that have unexported fields belong to the
// package that spells them: `struct{ a int }` written in two packages is
// two types. A cell's variable of such a type ([]struct{ in string }, the
// table of a table-driven loop), or a function taking one, can therefore
// not be spelled again by a later cell. The cell that spells the struct
// exports an alias for it, named after its text (structAlias), and later
// cells name the type through that alias.

// structAlias is the name of the alias of st in the package of the cell
// that spelled it: the same in that cell and in every later one, which see
// the same go/types struct.
func structAlias(st *types.Struct) string {
	sum := sha256.Sum256([]byte(types.TypeString(st, func(p *types.Package) string { return p.Path() })))
	return "GXu_" + hex.EncodeToString(sum[:8])
}

// foreignStruct returns the import path of the earlier cell that spelled
// st, when st has an unexported field of that cell (or is spelled the same
// as such a struct: in one Go package they would be one type).
func (g *gen) foreignStruct(st *types.Struct) (string, bool) {
	if home, ok := g.adopted[st]; ok {
		return home, true
	}
	for i := 0; i < st.NumFields(); i++ {
		f := st.Field(i)
		if g.foreign(f) {
			return g.in.FieldHome(f.Origin()), true
		}
	}
	return "", false
}

// exportStructs declares the aliases of the unnamed structs with unexported
// fields that the cell spells itself.
func (g *gen) exportStructs() {
	own := map[*types.Var]bool{}
	for _, obj := range g.c.Info.Defs {
		if f, ok := obj.(*types.Var); ok && f.IsField() && !f.Exported() {
			own[f] = true
		}
	}
	if len(own) == 0 {
		return
	}
	inTypeDecl := g.typeDeclStructs()
	seen := map[types.Type]bool{}
	var structs []*types.Struct // parents before the structs inside them
	collect := func(t types.Type) bool {
		if st, ok := t.(*types.Struct); ok {
			structs = append(structs, st)
		}
		return true
	}
	for _, tv := range g.c.Info.Types {
		walkTypes(tv.Type, seen, collect)
	}
	for _, obj := range g.c.Info.Defs {
		if obj != nil {
			walkTypes(obj.Type(), seen, collect)
		}
	}
	// The cell's generic structs: an instance of one is the cell's own type
	// (instantiated in its package), so a struct the cell spells that such
	// an instance may be stays its own too.
	var generic []*types.Struct
	for _, st := range structs {
		if hasTypeParam(st) {
			generic = append(generic, st)
		}
	}
	// Inner structs first: an outer alias spells them as decided for them.
	for _, st := range slices.Backward(structs) {
		mine := false
		for i := 0; i < st.NumFields(); i++ {
			mine = mine || own[st.Field(i)]
		}
		if mine && !hasTypeParam(st) && !hasLocalType(st) {
			g.structAliasDecl(st, identicalToAny(st, inTypeDecl) || instanceOfAny(st, generic))
		}
	}
}

// instanceOfAny reports whether st is an instance of one of the generic
// structs: the same fields, whose types match with type arguments for the
// type parameters (one argument per parameter).
func instanceOfAny(st *types.Struct, generic []*types.Struct) bool {
	for _, gs := range generic {
		if matchInstance(gs, st, map[*types.TypeParam]types.Type{}) {
			return true
		}
	}
	return false
}

// matchInstance reports whether t is gen with its type parameters bound
// as in args (binding those not bound yet). Types it does not take apart
// match when identical.
func matchInstance(gen, t types.Type, args map[*types.TypeParam]types.Type) bool {
	if tp, ok := gen.(*types.TypeParam); ok {
		if a, bound := args[tp]; bound {
			return types.Identical(a, t)
		}
		args[tp] = t
		return true
	}
	if !hasTypeParam(gen) {
		return types.Identical(gen, t)
	}
	switch g := gen.(type) {
	case *types.Pointer:
		u, ok := t.(*types.Pointer)
		return ok && matchInstance(g.Elem(), u.Elem(), args)
	case *types.Slice:
		u, ok := t.(*types.Slice)
		return ok && matchInstance(g.Elem(), u.Elem(), args)
	case *types.Array:
		u, ok := t.(*types.Array)
		return ok && g.Len() == u.Len() && matchInstance(g.Elem(), u.Elem(), args)
	case *types.Map:
		u, ok := t.(*types.Map)
		return ok && matchInstance(g.Key(), u.Key(), args) && matchInstance(g.Elem(), u.Elem(), args)
	case *types.Chan:
		u, ok := t.(*types.Chan)
		return ok && g.Dir() == u.Dir() && matchInstance(g.Elem(), u.Elem(), args)
	case *types.Struct:
		u, ok := t.(*types.Struct)
		if !ok || g.NumFields() != u.NumFields() {
			return false
		}
		for i := 0; i < g.NumFields(); i++ {
			gf, uf := g.Field(i), u.Field(i)
			if gf.Name() != uf.Name() || gf.Embedded() != uf.Embedded() || g.Tag(i) != u.Tag(i) ||
				!matchInstance(gf.Type(), uf.Type(), args) {
				return false
			}
		}
		return true
	case *types.Named:
		u, ok := t.(*types.Named)
		if !ok || g.Origin() != u.Origin() || g.TypeArgs().Len() != u.TypeArgs().Len() {
			return false
		}
		for i := 0; i < g.TypeArgs().Len(); i++ {
			if !matchInstance(g.TypeArgs().At(i), u.TypeArgs().At(i), args) {
				return false
			}
		}
		return true
	}
	// Signatures, interfaces: not taken apart; an instance may be.
	return true
}

// structAliasDecl declares `type GXu_… = struct{…}` for one of the cell's
// own structs. A struct spelled as an earlier cell spelled it becomes that
// cell's type (adopted), unless it stays the cell's own (keepOwn): it is
// identical to a struct in a type declaration, whose fields belong to the
// declared type, or to an instance of a generic struct of the cell.
func (g *gen) structAliasDecl(st *types.Struct, keepOwn bool) {
	name := structAlias(st)
	if home := g.structHome(name); home != "" && !keepOwn {
		g.adopted[st] = home
		for i := 0; i < st.NumFields(); i++ {
			if !st.Field(i).Exported() {
				g.adoptedFields[st.Field(i)] = true
			}
		}
		if _, done := g.refs[name]; !done {
			g.refs[name] = "type " + name + " = " + g.pkg(home) + "." + name + "\n"
		}
		return
	}
	if _, done := g.refs[name]; done {
		return
	}
	text, err := g.typeText(st)
	if err != nil {
		return // a later cell that needs it says so
	}
	g.refs[name] = "type " + name + " = " + text + "\n"
	g.structAliases = append(g.structAliases, name)
}

func (g *gen) structHome(alias string) string {
	if g.in.StructHome == nil {
		return ""
	}
	return g.in.StructHome(alias)
}

// identicalToAny reports whether t is identical to one of set.
func identicalToAny(t types.Type, set map[types.Type]bool) bool {
	for u := range set {
		if types.Identical(t, u) {
			return true
		}
	}
	return false
}

// typeDeclStructs are the struct types spelled inside the cell's type
// declarations: their fields belong to the declared types, so a struct
// identical to one of them stays the cell's own (an adopted one would no
// longer be identical to it).
func (g *gen) typeDeclStructs() map[types.Type]bool {
	out := map[types.Type]bool{}
	ast.Inspect(g.c.File, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok {
			return true
		}
		ast.Inspect(ts.Type, func(n ast.Node) bool {
			if s, ok := n.(*ast.StructType); ok {
				if tv, ok := g.c.Info.Types[s]; ok {
					out[tv.Type] = true
				}
			}
			return true
		})
		return false
	})
	return out
}

// adoptedStructType writes an adopted struct type spelled in the cell as
// the earlier cell's type.
func (g *gen) adoptedStructType(s *ast.StructType) bool {
	tv, ok := g.c.Info.Types[s]
	if !ok {
		return false
	}
	st, ok := tv.Type.(*types.Struct)
	if !ok {
		return false
	}
	home, ok := g.adopted[st]
	if ok {
		g.ed.replaceText(s, g.pkg(home)+"."+structAlias(st))
	}
	return ok
}

// hasTypeParam reports whether t mentions a type parameter.
func hasTypeParam(t types.Type) bool {
	return mentions(t, func(t types.Type) bool {
		_, ok := t.(*types.TypeParam)
		return ok
	})
}

// hasLocalType reports whether t mentions a type declared inside a
// function, which package-level code cannot name.
func hasLocalType(t types.Type) bool {
	return mentions(t, func(t types.Type) bool {
		n, ok := t.(*types.Named)
		if !ok {
			return false
		}
		p := n.Obj().Parent()
		return p != nil && p != types.Universe && p.Parent() != types.Universe
	})
}

// mentions reports whether is holds for t or a type t is made of.
func mentions(t types.Type, is func(types.Type) bool) bool {
	found := false
	walkTypes(t, map[types.Type]bool{}, func(t types.Type) bool {
		found = found || is(t)
		return !found
	})
	return found
}

// walkTypes calls visit on t and, while visit returns true, on the types t
// is made of (elements, fields, parameters and results, the type arguments
// of a named type, not its underlying type), each once per seen.
func walkTypes(t types.Type, seen map[types.Type]bool, visit func(types.Type) bool) {
	if t == nil || seen[t] {
		return
	}
	seen[t] = true
	if !visit(t) {
		return
	}
	walk := func(t types.Type) { walkTypes(t, seen, visit) }
	switch t := t.(type) {
	case *types.Pointer:
		walk(t.Elem())
	case *types.Slice:
		walk(t.Elem())
	case *types.Array:
		walk(t.Elem())
	case *types.Map:
		walk(t.Key())
		walk(t.Elem())
	case *types.Chan:
		walk(t.Elem())
	case *types.Struct:
		for i := 0; i < t.NumFields(); i++ {
			walk(t.Field(i).Type())
		}
	case *types.Named:
		for i := 0; i < t.TypeArgs().Len(); i++ {
			walk(t.TypeArgs().At(i))
		}
	case *types.Signature:
		for i := 0; i < t.Params().Len(); i++ {
			walk(t.Params().At(i).Type())
		}
		for i := 0; i < t.Results().Len(); i++ {
			walk(t.Results().At(i).Type())
		}
	}
}
