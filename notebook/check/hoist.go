package check

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"strconv"
	"strings"
)

// hoisting is the result of turning a cell's top-level definitions into
// package-level variables.
type hoisting struct {
	decls   []ast.Decl        // var declarations, and const declarations moved out of the body
	imports []*ast.ImportSpec // imports the hoisted types need
	list    []*Hoisted
	err     *Diag
}

// hoist rewrites the statements of p for pass 2 (see doc.go): the variables
// they define at top level become package-level variables with the types
// pass 1 found, definitions become assignments, and uses of session
// bindings that those variables shadow go through stand-ins. It returns the
// stand-ins to put in scope.
func (st *state) hoist(c *Cell, p *parsed, info1 *types.Info, ids []*ast.Ident, idx map[*ast.Ident]int, own map[string]bool, byPath map[string]string) (hoisting, map[types.Object]*Entry) {
	s := st.s
	var h hoisting
	hoistNames := map[string]bool{}
	for _, id := range ids {
		hoistNames[id.Name] = true
	}
	// Names taken in pass 2: the file's declarations and the hoisted names.
	taken := map[string]bool{}
	for n := range own {
		taken[n] = true
	}
	for n := range hoistNames {
		taken[n] = true
	}
	tn := &typeNamer{st: st, taken: taken, aliases: map[types.Object]*Entry{}, byEntry: map[*Entry]string{}, imports: map[string]string{}}
	for path, name := range byPath {
		tn.imports[path] = name
	}

	// 1. Stand-ins for session bindings the statements use under a name a
	// hoisted variable now takes (x := x + 1).
	renamed := map[*ast.Ident]string{}
	for _, stmt := range p.stmts {
		ast.Inspect(stmt, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok || !hoistNames[id.Name] {
				return true
			}
			obj := info1.Uses[id]
			if obj == nil {
				return true
			}
			if pn, ok := obj.(*types.PkgName); ok {
				alias := "_gxold_" + id.Name
				if _, done := tn.imports["\x00alias:"+alias]; !done {
					tn.imports["\x00alias:"+alias] = pn.Imported().Path()
					h.imports = append(h.imports, &ast.ImportSpec{Name: ast.NewIdent(alias), Path: &ast.BasicLit{Kind: token.STRING, Value: strconv.Quote(pn.Imported().Path())}})
				}
				renamed[id] = alias
				return true
			}
			e := s.byObj[obj]
			if e == nil {
				return true // the cell's own (pass-1) variable
			}
			renamed[id] = tn.standIn(e)
			return true
		})
	}
	for id, name := range renamed {
		id.Name = name
	}

	// 2. The hoisted variables, with the types pass 1 found.
	seen := map[string]bool{}
	for _, id := range ids {
		obj, ok := info1.Defs[id].(*types.Var)
		if !ok || seen[id.Name] {
			continue // a constant, or a variable := redeclares
		}
		seen[id.Name] = true
		texpr, err := tn.expr(obj.Type())
		if err != nil {
			h.err = &Diag{Pos: s.fset.Position(id.Pos()), Msg: fmt.Sprintf("%s has type %s, which %v; give %s a type that can be named (for example an interface)", id.Name, obj.Type(), err, id.Name)}
			return h, nil
		}
		h.decls = append(h.decls, &ast.GenDecl{TokPos: id.Pos(), Tok: token.VAR, Specs: []ast.Spec{
			&ast.ValueSpec{Names: []*ast.Ident{{NamePos: id.Pos(), Name: id.Name}}, Type: texpr},
		}})
		h.list = append(h.list, &Hoisted{Name: id.Name, Stmt: idx[id]})
	}
	h.imports = append(h.imports, tn.hidden...)

	// 3. Definitions become assignments; constants move to package level.
	for i, stmt := range p.stmts {
		p.stmts[i] = st.assignForm(stmt, &h)
	}
	return h, tn.aliases
}

// assignForm turns a top-level definition into an assignment to the
// hoisted variables.
func (st *state) assignForm(stmt ast.Stmt, h *hoisting) ast.Stmt {
	if l, ok := stmt.(*ast.LabeledStmt); ok {
		l.Stmt = st.assignForm(l.Stmt, h)
		return l
	}
	switch x := stmt.(type) {
	case *ast.AssignStmt:
		if x.Tok == token.DEFINE {
			x.Tok = token.ASSIGN
		}
		return x
	case *ast.DeclStmt:
		g, ok := x.Decl.(*ast.GenDecl)
		if !ok {
			return x
		}
		switch g.Tok {
		case token.CONST:
			h.decls = append(h.decls, g)
			return &ast.EmptyStmt{Semicolon: g.Pos(), Implicit: true}
		case token.VAR:
			var list []ast.Stmt
			for _, sp := range g.Specs {
				vs := sp.(*ast.ValueSpec)
				if len(vs.Values) > 0 {
					lhs := make([]ast.Expr, len(vs.Names))
					for i, n := range vs.Names {
						lhs[i] = n
					}
					list = append(list, &ast.AssignStmt{Lhs: lhs, TokPos: vs.Pos(), Tok: token.ASSIGN, Rhs: vs.Values})
					continue
				}
				for _, n := range vs.Names {
					if n.Name == "_" {
						continue
					}
					// var x T: x gets T's zero value every time the cell runs.
					zero := &ast.StarExpr{Star: n.Pos(), X: &ast.CallExpr{Fun: &ast.Ident{Name: "new"}, Lparen: n.Pos(), Args: []ast.Expr{vs.Type}, Rparen: n.End()}}
					list = append(list, &ast.AssignStmt{Lhs: []ast.Expr{n}, TokPos: n.Pos(), Tok: token.ASSIGN, Rhs: []ast.Expr{zero}})
				}
			}
			if len(list) == 1 {
				return list[0]
			}
			return &ast.BlockStmt{Lbrace: g.Pos(), List: list, Rbrace: g.End()}
		}
	}
	return stmt
}

// typeNamer spells types in the canonical file.
type typeNamer struct {
	st      *state
	taken   map[string]bool         // names the file declares
	aliases map[types.Object]*Entry // stand-ins created
	byEntry map[*Entry]string       // entry → its stand-in's name
	imports map[string]string       // import path → local name in the file
	hidden  []*ast.ImportSpec       // imports added for types
}

// standIn returns the name of a stand-in for a shadowed session binding,
// creating it.
func (tn *typeNamer) standIn(e *Entry) string {
	if n, ok := tn.byEntry[e]; ok {
		return n
	}
	name := fmt.Sprintf("_gxold%d_%s", e.ID, e.Name)
	var obj types.Object
	switch o := e.Obj.(type) {
	case *types.Var:
		obj = types.NewVar(token.NoPos, tn.st.s.pkg, name, o.Type())
	case *types.Func:
		obj = types.NewFunc(token.NoPos, tn.st.s.pkg, name, o.Type().(*types.Signature))
	case *types.Const:
		obj = types.NewConst(token.NoPos, tn.st.s.pkg, name, o.Type(), o.Val())
	case *types.TypeName:
		obj = types.NewTypeName(token.NoPos, tn.st.s.pkg, name, o.Type())
	default:
		return e.Name
	}
	tn.aliases[obj] = e
	tn.byEntry[e] = name
	return name
}

// expr returns the type as an expression of the canonical file.
func (tn *typeNamer) expr(t types.Type) (ast.Expr, error) {
	var b strings.Builder
	if err := tn.write(&b, t); err != nil {
		return nil, err
	}
	x, err := parser.ParseExpr(b.String())
	if err != nil {
		return nil, fmt.Errorf("cannot be written in Go source (%v)", err)
	}
	return x, nil
}

func (tn *typeNamer) write(b *strings.Builder, t types.Type) error {
	switch t := t.(type) {
	case *types.Basic:
		if t.Kind() == types.UnsafePointer {
			b.WriteString(tn.pkgName("unsafe", "unsafe") + ".Pointer")
			return nil
		}
		if t.Info()&types.IsUntyped != 0 {
			return fmt.Errorf("is untyped")
		}
		b.WriteString(t.Name())
	case *types.Pointer:
		b.WriteString("*")
		return tn.write(b, t.Elem())
	case *types.Slice:
		b.WriteString("[]")
		return tn.write(b, t.Elem())
	case *types.Array:
		fmt.Fprintf(b, "[%d]", t.Len())
		return tn.write(b, t.Elem())
	case *types.Map:
		b.WriteString("map[")
		if err := tn.write(b, t.Key()); err != nil {
			return err
		}
		b.WriteString("]")
		return tn.write(b, t.Elem())
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
		case types.RecvOnly:
			b.WriteString("<-chan ")
		}
		return tn.write(b, t.Elem())
	case *types.Signature:
		b.WriteString("func")
		return tn.signature(b, t)
	case *types.Struct:
		b.WriteString("struct{")
		for i := 0; i < t.NumFields(); i++ {
			f := t.Field(i)
			if i > 0 {
				b.WriteString("; ")
			}
			if !f.Exported() && f.Pkg() != nil && f.Pkg() != tn.st.s.pkg {
				return fmt.Errorf("has an unexported field %s of package %s", f.Name(), f.Pkg().Path())
			}
			if !f.Embedded() {
				b.WriteString(f.Name() + " ")
			}
			if err := tn.write(b, f.Type()); err != nil {
				return err
			}
			if tag := t.Tag(i); tag != "" {
				b.WriteString(" " + strconv.Quote(tag))
			}
		}
		b.WriteString("}")
	case *types.Interface:
		b.WriteString("interface{")
		first := true
		sep := func() {
			if !first {
				b.WriteString("; ")
			}
			first = false
		}
		for i := 0; i < t.NumEmbeddeds(); i++ {
			sep()
			if err := tn.write(b, t.EmbeddedType(i)); err != nil {
				return err
			}
		}
		for i := 0; i < t.NumExplicitMethods(); i++ {
			m := t.ExplicitMethod(i)
			if !m.Exported() && m.Pkg() != nil && m.Pkg() != tn.st.s.pkg {
				return fmt.Errorf("has an unexported method %s of package %s", m.Name(), m.Pkg().Path())
			}
			sep()
			b.WriteString(m.Name())
			if err := tn.signature(b, m.Type().(*types.Signature)); err != nil {
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
			if err := tn.write(b, t.Term(i).Type()); err != nil {
				return err
			}
		}
	case *types.Named:
		if err := tn.typeName(b, t.Obj()); err != nil {
			return err
		}
		return tn.typeArgs(b, t.TypeArgs())
	case *types.Alias:
		if t.Obj().Pkg() == nil { // any
			b.WriteString(t.Obj().Name())
			return nil
		}
		if t.TypeArgs().Len() > 0 {
			return tn.write(b, types.Unalias(t))
		}
		return tn.typeName(b, t.Obj())
	case *types.TypeParam:
		return fmt.Errorf("is a type parameter")
	case *types.Tuple:
		return fmt.Errorf("is a tuple")
	default:
		return fmt.Errorf("is not supported (%T)", t)
	}
	return nil
}

func (tn *typeNamer) typeArgs(b *strings.Builder, args *types.TypeList) error {
	if args.Len() == 0 {
		return nil
	}
	b.WriteString("[")
	for i := 0; i < args.Len(); i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		if err := tn.write(b, args.At(i)); err != nil {
			return err
		}
	}
	b.WriteString("]")
	return nil
}

func (tn *typeNamer) signature(b *strings.Builder, sig *types.Signature) error {
	b.WriteString("(")
	for i := 0; i < sig.Params().Len(); i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		t := sig.Params().At(i).Type()
		if sig.Variadic() && i == sig.Params().Len()-1 {
			b.WriteString("...")
			t = t.(*types.Slice).Elem()
		}
		if err := tn.write(b, t); err != nil {
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
			if err := tn.write(b, sig.Results().At(i).Type()); err != nil {
				return err
			}
		}
		b.WriteString(")")
	}
	return nil
}

// typeName writes the name of a declared type as the canonical file
// reaches it.
func (tn *typeNamer) typeName(b *strings.Builder, obj *types.TypeName) error {
	pkg := obj.Pkg()
	switch {
	case pkg == nil:
		b.WriteString(obj.Name())
		return nil
	case pkg != tn.st.s.pkg:
		if !obj.Exported() {
			return fmt.Errorf("is not exported by package %s", pkg.Path())
		}
		if obj.Parent() != nil && obj.Parent() != pkg.Scope() {
			return fmt.Errorf("is declared inside a function")
		}
		b.WriteString(tn.pkgName(pkg.Path(), pkg.Name()) + "." + obj.Name())
		return nil
	}
	if obj.Parent() != nil && obj.Parent().Parent() != types.Universe {
		return fmt.Errorf("is declared inside a function")
	}
	e := tn.st.s.byObj[obj]
	if e == nil {
		// Declared by this cell (pass 1): the same name binds it in pass 2.
		b.WriteString(obj.Name())
		return nil
	}
	if tn.st.s.names[obj.Name()] == e && !tn.taken[obj.Name()] && !tn.st.rehome[e] {
		b.WriteString(obj.Name())
		return nil
	}
	b.WriteString(tn.standIn(e))
	return nil
}

// pkgName returns the file's local name for an import path, adding a
// hidden import when the file has none.
func (tn *typeNamer) pkgName(path, name string) string {
	if n, ok := tn.imports[path]; ok {
		return n
	}
	local := fmt.Sprintf("_gxi%d_%s", len(tn.hidden), name)
	tn.imports[path] = local
	tn.hidden = append(tn.hidden, &ast.ImportSpec{Name: ast.NewIdent(local), Path: &ast.BasicLit{Kind: token.STRING, Value: strconv.Quote(path)}})
	return local
}
