package gen

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"sort"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/notebook/check"
)

// assemble writes the package: imports, the generated declarations, the
// cell's declarations, the initializer and the statements, GXSymbols.
func (g *gen) assemble() (*Output, error) {
	c := g.c
	out := &Output{}
	var decls, gen strings.Builder

	// The cell's declarations, each at its own position.
	var inits []string
	var zero []string
	for _, d := range c.File.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Name.Name == check.BodyName && d == c.Body {
				continue
			}
			if d.Recv == nil && d.Name.Name == "init" {
				name := fmt.Sprintf("_gxinit%d", len(inits))
				inits = append(inits, name)
				g.ed.replaceText(d.Name, name)
			}
			decls.WriteString(g.ed.lineDirective(declStart(d)))
			decls.WriteString(g.ed.render(d))
			decls.WriteString("\n")
			if g.hookFuncs[d] {
				obj := c.Info.Defs[d.Name].(*types.Func)
				text, err := g.hookDecls(obj)
				if err != nil {
					return nil, fmt.Errorf("func %s: %w", obj.Name(), err)
				}
				gen.WriteString(text)
				out.Funcs = append(out.Funcs, obj.Name())
				// The body without the prologue, for the hooks that check.
				g.bare = true
				decls.WriteString(g.ed.lineDirective(declStart(d)))
				decls.WriteString("func _gxb_" + obj.Name() + g.ed.renderRange(d.Name.End(), d.End()) + "\n")
				g.bare = false
			}
		case *ast.GenDecl:
			switch d.Tok {
			case token.IMPORT:
				continue
			case token.VAR:
				if g.hoistDecls[d] {
					for _, sp := range d.Specs {
						for _, id := range sp.(*ast.ValueSpec).Names {
							if err := g.declareVar(&gen, id, out); err != nil {
								return nil, err
							}
						}
					}
					continue
				}
				// Package-level variables: declared here, initialized by
				// _gxinit.
				decls.WriteString(g.ed.lineDirective(declStart(d)))
				var b strings.Builder
				for _, sp := range d.Specs {
					vs := sp.(*ast.ValueSpec)
					blankTyped := false
					for _, id := range vs.Names {
						if id.Name == "_" {
							// The declared type of a blank variable stays:
							// var _ io.Reader = &T{} uses io (the value is
							// assigned in _gxinit, its assignability checked
							// with the cell).
							if vs.Type != nil && !blankTyped {
								fmt.Fprintf(&b, "var _ %s\n", g.ed.render(vs.Type))
								blankTyped = true
							}
							continue
						}
						if err := g.declareVar(&b, id, out); err != nil {
							return nil, err
						}
						if len(vs.Values) == 0 {
							obj := c.Info.Defs[id].(*types.Var)
							t, _ := g.typeText(obj.Type())
							zero = append(zero, fmt.Sprintf("%s = *new(%s)", g.varRef(obj), t))
						}
					}
				}
				decls.WriteString(keepLines(b.String(), g.ed.lines(declStart(d), d.End())))
				decls.WriteString("\n")
			default:
				decls.WriteString(g.ed.lineDirective(declStart(d)))
				decls.WriteString(g.ed.render(d))
				decls.WriteString("\n")
				if d.Tok == token.TYPE {
					for _, sp := range d.Specs {
						ts := sp.(*ast.TypeSpec)
						if ts.Name.Name == "_" {
							continue
						}
						fmt.Fprintf(&gen, "%s\n", g.typeExport(ts))
						if ts.TypeParams == nil && ts.Name.Name != "_" && !isConstraint(c.Info.Defs[ts.Name]) {
							out.Types = append(out.Types, ts.Name.Name)
						}
					}
				}
				if d.Tok == token.CONST {
					for _, sp := range d.Specs {
						for _, id := range sp.(*ast.ValueSpec).Names {
							if id.Name != "_" {
								fmt.Fprintf(&gen, "const GXc_%s = %s\n", id.Name, id.Name)
							}
						}
					}
				}
			}
		}
	}
	// Accessors for later cells: every non-generic function, and a generic
	// wrapper for each generic one.
	gen.WriteString("type GXA struct{}\n")
	for _, d := range c.File.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv != nil || fd.Name.Name == "init" || fd.Name.Name == "_" || fd == c.Body {
			continue
		}
		obj, ok := c.Info.Defs[fd.Name].(*types.Func)
		if !ok {
			continue
		}
		if err := g.funcExport(&gen, obj); err != nil {
			return nil, err
		}
	}

	// _gxinit: package-level variables in Go's order, then init functions.
	var body strings.Builder
	body.WriteString("//line " + generatedFile + ":1\nfunc _gxinit() {\n")
	// Variables without an initializer are zero before any initializer runs
	// (one may change them: var n int; var x = f() where f increments n).
	for _, z := range zero {
		body.WriteString(z + "\n")
	}
	for _, ini := range c.Info.InitOrder {
		var lhs []string
		for _, v := range ini.Lhs {
			if v.Name() == "_" {
				lhs = append(lhs, "_")
			} else {
				lhs = append(lhs, g.varRef(v))
			}
		}
		body.WriteString(g.ed.lineDirective(ini.Rhs.Pos()))
		body.WriteString(strings.Join(lhs, ", ") + " = " + g.ed.render(ini.Rhs) + "\n")
	}
	for _, n := range inits {
		body.WriteString(n + "()\n")
	}
	body.WriteString("}\n")

	// _gxrun: the statements, each at its position, counting progress.
	body.WriteString("//line " + generatedFile + ":1\nfunc _gxrun() {\n")
	if c.Body != nil {
		for i, st := range c.Body.Body.List {
			text := g.statement(i, st)
			if text == "" {
				continue
			}
			body.WriteString(g.ed.lineDirective(c.StmtSpans[i].Pos))
			body.WriteString(text)
			fmt.Fprintf(&body, "\n_gxdone = %d; _gxrt.Stmt()\n", i+1)
		}
	}
	if c.Main {
		body.WriteString("_gxrt.Main(main)\n")
	}
	body.WriteString("}\n")

	// GXSymbols.
	var sym strings.Builder
	sym.WriteString("func init() { _gxrt.Register(_gxsymbols) }\n\nvar _gxsymbols = map[string]interface{}{\n\t\"init\": _gxinit,\n\t\"run\": _gxrun,\n\t\"done\": &_gxdone,\n")
	for _, v := range out.Vars {
		fmt.Fprintf(&sym, "\t%q: &%s,\n", "v:"+v, g.ownName(v))
	}
	for _, f := range out.Funcs {
		fmt.Fprintf(&sym, "\t%q: %s,\n\t%q: &_gxo_%s,\n\t%q: _gxt_%s,\n", "f:"+f, g.ownName(f), "o:"+f, f, "s:"+f, f)
	}
	for _, t := range out.Types {
		fmt.Fprintf(&sym, "\t%q: (*%s)(nil),\n", "t:"+t, t)
	}
	var injected []*check.Entry
	for e := range g.injected {
		injected = append(injected, e)
	}
	sort.Slice(injected, func(i, j int) bool { return injected[i].ID < injected[j].ID })
	for _, e := range injected {
		fmt.Fprintf(&sym, "\t%q: &_gxv%d,\n", "i:"+strconv.Itoa(e.ID), e.ID)
	}
	out.Injected = injected
	sym.WriteString("}\n")

	if len(g.errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(g.errs, "; "))
	}

	// The file.
	var f strings.Builder
	f.WriteString("// Code generated by goaccel from " + check.FileName(c.N) + ". DO NOT EDIT.\n\npackage main\n\nimport (\n")
	for _, is := range c.File.Imports {
		path, _ := strconv.Unquote(is.Path.Value)
		name := ""
		if is.Name != nil {
			name = is.Name.Name
		}
		local := name
		if local == "" {
			if obj, ok := c.Info.Implicits[is].(*types.PkgName); ok {
				local = obj.Name()
			}
		}
		keep := false
		switch name {
		case "_":
			keep = true
		case ".":
			keep = g.usedPkgs["."+path]
		default:
			keep = g.usedPkgs[local] || g.imp.used[local]
		}
		if !keep {
			continue
		}
		fmt.Fprintf(&f, "\t%s %q\n", name, path)
		out.Imports = append(out.Imports, path)
	}
	f.WriteString(g.imp.specs())
	for _, p := range g.imp.extra {
		out.Imports = append(out.Imports, p)
	}
	f.WriteString(")\n\n//line " + generatedFile + ":1\n")
	f.WriteString("var _gxdone int\nvar _ = _gxrt.Check\n")
	refs := make([]string, 0, len(g.refs))
	for n := range g.refs {
		refs = append(refs, n)
	}
	sort.Strings(refs)
	for _, n := range refs {
		f.WriteString(g.refs[n])
	}
	for _, s := range g.shadows {
		f.WriteString(s.decl)
	}
	f.WriteString(gen.String())
	f.WriteString(decls.String())
	f.WriteString(body.String())
	f.WriteString("//line " + generatedFile + ":1\n")
	f.WriteString(sym.String())
	out.Source = []byte(f.String())
	out.StructAliases = g.structAliases
	sort.Strings(out.Imports)
	out.Imports = uniq(out.Imports)
	out.Result = g.trailing
	return out, nil
}

// declStart is where a declaration's text starts (its doc comment aside).
func declStart(d ast.Decl) token.Pos { return d.Pos() }

// ownName is the name of an own function or variable in generated code.
func (g *gen) ownName(name string) string {
	if ast.IsExported(name) {
		return "_gxE_" + name
	}
	return name
}

// declareVar declares the storage of a package-level variable of the cell
// (or, for a variable that keeps an earlier one's storage, nothing: it is
// reached through the injected pointer).
func (g *gen) declareVar(b *strings.Builder, id *ast.Ident, out *Output) error {
	obj, ok := g.c.Info.Defs[id].(*types.Var)
	if !ok {
		return nil
	}
	if e := g.reuse[obj]; e != nil {
		g.injectedVar(e)
		return nil
	}
	t, err := g.typeText(obj.Type())
	if err != nil {
		return fmt.Errorf("variable %s: %w", obj.Name(), err)
	}
	fmt.Fprintf(b, "var %s %s\n", g.varRef(obj), t)
	out.Vars = append(out.Vars, obj.Name())
	return nil
}

// hookDecls declares a function's override hook and what makes the hooks
// the engine sets while a cell is being interrupted:
//
//	var _gxo_f func(P) R                  the hook
//	func _gxt_f(next func(P) R) func(P) R  a hook that checks for an
//	                                       interrupt, then calls next or,
//	                                       when nil, f's body (_gxb_f)
func (g *gen) hookDecls(obj *types.Func) (string, error) {
	sig := obj.Type().(*types.Signature)
	var params, args []string
	for i := 0; i < sig.Params().Len(); i++ {
		t := sig.Params().At(i).Type()
		dots := ""
		if sig.Variadic() && i == sig.Params().Len()-1 {
			t, dots = t.(*types.Slice).Elem(), "..."
		}
		tt, err := g.typeText(t)
		if err != nil {
			return "", err
		}
		p := fmt.Sprintf("_gxp%d", i)
		params = append(params, p+" "+dots+tt)
		args = append(args, p+dots)
	}
	hookT, err := g.typeText(sig)
	if err != nil {
		return "", err
	}
	name := obj.Name()
	var rtypes []string
	for i := 0; i < sig.Results().Len(); i++ {
		tt, err := g.typeText(sig.Results().At(i).Type())
		if err != nil {
			return "", err
		}
		rtypes = append(rtypes, tt)
	}
	results := ""
	if len(rtypes) > 0 {
		results = " (" + strings.Join(rtypes, ", ") + ")"
	}
	a := strings.Join(args, ", ")
	var b strings.Builder
	fmt.Fprintf(&b, "var _gxo_%s %s\n", name, hookT)
	fmt.Fprintf(&b, "func _gxt_%s(next %s) %s {\n\treturn func(%s)%s {\n\t\t_gxrt.Check()\n", name, hookT, hookT, strings.Join(params, ", "), results)
	if sig.Results().Len() > 0 {
		fmt.Fprintf(&b, "\t\tif next != nil {\n\t\t\treturn next(%s)\n\t\t}\n\t\treturn _gxb_%s(%s)\n", a, name, a)
	} else {
		fmt.Fprintf(&b, "\t\tif next != nil {\n\t\t\tnext(%s)\n\t\t\treturn\n\t\t}\n\t\t_gxb_%s(%s)\n", a, name, a)
	}
	b.WriteString("\t}\n}\n")
	return b.String(), nil
}

// keepLines pads s with line breaks to n of them, so the lines after it
// keep their numbers.
func keepLines(s string, n int) string {
	have := strings.Count(s, "\n")
	if have >= n {
		return strings.TrimSuffix(s, "\n")
	}
	return strings.TrimSuffix(s, "\n") + strings.Repeat("\n", n-have)
}

// typeExport is the exported alias of a type for later cells.
func (g *gen) typeExport(ts *ast.TypeSpec) string {
	if ts.TypeParams == nil {
		return fmt.Sprintf("type GXt_%s = %s", ts.Name.Name, ts.Name.Name)
	}
	if tn, ok := g.c.Info.Defs[ts.Name].(*types.TypeName); ok {
		if named, ok := tn.Type().(*types.Named); ok {
			if params, args, err := g.typeParams(named.TypeParams()); err == nil {
				return fmt.Sprintf("type GXt_%s%s = %s%s", ts.Name.Name, params, ts.Name.Name, args)
			}
		}
	}
	var names []string
	for _, f := range ts.TypeParams.List {
		for _, n := range f.Names {
			names = append(names, n.Name)
		}
	}
	return fmt.Sprintf("type GXt_%s%s = %s[%s]", ts.Name.Name, g.ed.render(ts.TypeParams), ts.Name.Name, strings.Join(names, ", "))
}

// funcExport writes the accessor of a function for later cells.
func (g *gen) funcExport(b *strings.Builder, obj *types.Func) error {
	sig := obj.Type().(*types.Signature)
	names := make([]string, sig.Params().Len())
	args := make([]string, len(names))
	for i := range names {
		names[i] = fmt.Sprintf("_gxp%d", i)
		args[i] = names[i]
	}
	if sig.Variadic() && len(args) > 0 {
		args[len(args)-1] += "..."
	}
	target := g.ownName(obj.Name())
	if sig.TypeParams().Len() > 0 {
		tparams, targs, err := g.typeParams(sig.TypeParams())
		if err != nil {
			return fmt.Errorf("func %s: %w", obj.Name(), err)
		}
		b.WriteString("func GXg_" + obj.Name() + tparams)
		target += targs
	} else {
		b.WriteString("func (GXA) F_" + obj.Name())
	}
	if err := g.writeSignature(b, sig, names); err != nil {
		return fmt.Errorf("func %s: %w", obj.Name(), err)
	}
	call := target + "(" + strings.Join(args, ", ") + ")"
	if sig.Results().Len() > 0 {
		b.WriteString(" { return " + call + " }\n")
	} else {
		b.WriteString(" { " + call + " }\n")
	}
	if sig.TypeParams().Len() == 0 {
		// The function itself, for `defer f()` in later cells: recover
		// works only in the function a defer calls, not through F_.
		ft, err := g.typeText(sig)
		if err != nil {
			return fmt.Errorf("func %s: %w", obj.Name(), err)
		}
		b.WriteString("func (GXA) V_" + obj.Name() + "() " + ft + " { return " + target + " }\n")
	}
	return nil
}

// statement is the text of top-level statement i in _gxrun.
func (g *gen) statement(i int, st ast.Stmt) string {
	c := g.c
	span := c.StmtSpans[i]
	if _, ok := st.(*ast.EmptyStmt); ok && st.Pos() != span.Pos {
		return "" // a const declaration, moved to package level
	}
	var text string
	if g.startsWith(span.Pos, "var") {
		text = keepLines(g.varStatement(st), g.ed.lines(span.Pos, span.End))
	} else {
		text = g.ed.render(st)
	}
	if es, ok := st.(*ast.ExprStmt); ok && c.Trailing == es {
		switch g.trailing = TrailingResult(c, es.X); g.trailing {
		case SingleResult:
			text = "_gxrt.Result(" + text + ")"
		case MultiResult:
			text = "_gxrt.Results(" + text + ")"
		}
	}
	return text
}

// startsWith reports whether the source at pos starts with word.
func (g *gen) startsWith(pos token.Pos, word string) bool {
	tf := g.c.Fset.File(pos)
	if tf == nil {
		return false
	}
	text := g.c.Text(tf)
	off := tf.Offset(pos)
	return strings.HasPrefix(text[off:], word+" ") || strings.HasPrefix(text[off:], word+"\t") || strings.HasPrefix(text[off:], word+"(")
}

// varStatement writes the assignment check made of a top-level var
// statement.
func (g *gen) varStatement(st ast.Stmt) string {
	switch st := st.(type) {
	case *ast.AssignStmt:
		var lhs, rhs []string
		for _, l := range st.Lhs {
			lhs = append(lhs, g.ed.render(l))
		}
		for _, r := range st.Rhs {
			if star, ok := r.(*ast.StarExpr); ok {
				if call, ok := star.X.(*ast.CallExpr); ok && len(call.Args) == 1 {
					if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "new" && !id.Pos().IsValid() || ok && id.Name == "new" && call.Lparen == id.Pos() {
						rhs = append(rhs, "*new("+g.ed.render(call.Args[0])+")")
						continue
					}
				}
			}
			rhs = append(rhs, g.ed.render(r))
		}
		return strings.Join(lhs, ", ") + " = " + strings.Join(rhs, ", ")
	case *ast.BlockStmt:
		var parts []string
		for _, s := range st.List {
			parts = append(parts, g.varStatement(s))
		}
		return "{ " + strings.Join(parts, "; ") + " }"
	}
	return g.ed.render(st)
}

// TrailingResult decides how a cell's trailing expression x is shown.
func TrailingResult(c *check.Cell, x ast.Expr) ResultKind {
	tv := c.Info.Types[x]
	if tv.IsVoid() {
		return NoResult
	}
	if call, ok := ast.Unparen(x).(*ast.CallExpr); ok && quiet(c, call) {
		return NoResult
	}
	if tup, ok := tv.Type.(*types.Tuple); ok {
		if tup.Len() == 0 {
			return NoResult
		}
		return MultiResult
	}
	if tv.IsType() || tv.IsBuiltin() {
		return NoResult
	}
	return SingleResult
}

// quiet reports a trailing call whose values nobody wants to see:
// fmt.Println's byte count and error, the handle display.HTML returns.
func quiet(c *check.Cell, call *ast.CallExpr) bool {
	se, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	fn, ok := c.Info.Uses[se.Sel].(*types.Func)
	if !ok || fn.Pkg() == nil {
		return false
	}
	switch fn.Pkg().Path() {
	case "fmt":
		return strings.HasPrefix(fn.Name(), "Print") || strings.HasPrefix(fn.Name(), "Fprint")
	case "github.com/goaccel/goaccel/display":
		return true
	}
	return false
}

// isConstraint reports whether obj is an interface usable only as a type
// constraint (it has a type set), of which no value or pointer exists.
func isConstraint(obj types.Object) bool {
	if obj == nil {
		return false
	}
	it, ok := obj.Type().Underlying().(*types.Interface)
	return ok && !it.IsMethodSet()
}
