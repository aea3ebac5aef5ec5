package yaegirunner

// A cell's imports (new ones, re-imports dropped, auto-imports of packages
// used without one) and the names a cell declares.

import (
	"fmt"
	"go/ast"
	"go/token"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/frontend"
)

// newImports returns the cell's import specs that are not imported yet.
func (r *Runner) newImports(pc *parsedCell) ([]*ast.ImportSpec, *frontend.Error) {
	if pc.imports == nil {
		return nil, nil
	}
	var specs []*ast.ImportSpec
	seen := map[string]string{}
	for _, s := range pc.imports.Imports {
		p, err := strconv.Unquote(s.Path.Value)
		if err != nil {
			continue
		}
		name := r.importName(s)
		if name == "_" || name == "." {
			if !r.log.HasImport(name, p) {
				specs = append(specs, s)
			}
			continue
		}
		old, ok := r.log.Imported(name)
		if !ok {
			old, ok = seen[name]
		}
		if ok {
			if old == p {
				continue // re-import: dropped silently
			}
			pos := r.interp().FileSet().Position(s.Pos())
			msg := fmt.Sprintf("%s: %s is already imported as %q; import %q under another name (import x %q) or use %%reset",
				shortPos(pos), name, old, p, p)
			return nil, &frontend.Error{Name: "ImportError", Value: msg, Traceback: append([]string{msg}, sourceLines(pc.src, pos.Line, pos.Column)...)}
		}
		seen[name] = p
		specs = append(specs, s)
	}
	return specs, nil
}

// importName is the name an import binds.
func (r *Runner) importName(s *ast.ImportSpec) string {
	if s.Name != nil {
		return s.Name.Name
	}
	p, _ := strconv.Unquote(s.Path.Value)
	if n, ok := r.opts.Packages.name(p); ok {
		return n
	}
	base := path.Base(p)
	if len(base) > 1 && base[0] == 'v' && strings.Trim(base[1:], "0123456789") == "" {
		base = path.Base(path.Dir(p))
	}
	return strings.TrimPrefix(strings.TrimSuffix(base, ".go"), "go-")
}

func importSource(s *ast.ImportSpec) string {
	if s.Name != nil {
		return "import " + s.Name.Name + " " + s.Path.Value
	}
	return "import " + s.Path.Value
}

// autoImports finds packages the cell uses (pkg.Name) without importing or
// declaring pkg, and returns import specs for those in the symbol tables.
func (r *Runner) autoImports(pc *parsedCell, explicit []*ast.ImportSpec, cellNames map[string]bool) []*ast.ImportSpec {
	byName := r.opts.Packages.importable()
	imported := map[string]bool{}
	for n := range r.log.Imports() {
		imported[n] = true
	}
	for _, s := range explicit {
		imported[r.importName(s)] = true
	}
	if pc.imports != nil {
		for _, s := range pc.imports.Imports {
			imported[r.importName(s)] = true
		}
	}
	want := map[string]bool{}
	visit := func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok || id.Obj != nil {
			return true
		}
		name := id.Name
		if imported[name] || cellNames[name] || want[name] || isUniverse(name) {
			return true
		}
		if _, ok := byName[name]; ok && !r.log.HasName(name) {
			want[name] = true
		}
		return true
	}
	if pc.decls != nil {
		ast.Inspect(pc.decls, visit)
	}
	if pc.body != nil {
		ast.Inspect(pc.body, visit)
	}
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	var specs []*ast.ImportSpec
	for _, n := range names {
		specs = append(specs, &ast.ImportSpec{Path: &ast.BasicLit{Kind: token.STRING, Value: strconv.Quote(byName[n])}})
	}
	return specs
}

func isUniverse(name string) bool {
	switch name {
	case "bool", "byte", "complex64", "complex128", "error", "float32", "float64", "int", "int8", "int16",
		"int32", "int64", "rune", "string", "uint", "uint8", "uint16", "uint32", "uint64", "uintptr", "any",
		"true", "false", "iota", "nil", "append", "cap", "close", "complex", "copy", "delete", "imag", "len",
		"make", "new", "panic", "print", "println", "real", "recover", "min", "max", "clear", "comparable":
		return true
	}
	return false
}

// declNames lists the names a top-level declaration declares.
func declNames(d ast.Decl) []string {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil {
			return []string{d.Name.Name}
		}
	case *ast.GenDecl:
		var out []string
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				out = append(out, s.Name.Name)
			case *ast.ValueSpec:
				for _, n := range s.Names {
					out = append(out, n.Name)
				}
			}
		}
		return out
	}
	return nil
}

// stmtNames lists the names a top-level statement defines (which yaegi
// makes globals): x := ..., var x ..., const x = ...
func stmtNames(st ast.Stmt) []string {
	var out []string
	switch st := st.(type) {
	case *ast.AssignStmt:
		if st.Tok == token.DEFINE {
			for _, l := range st.Lhs {
				if id, ok := l.(*ast.Ident); ok && id.Name != "_" && !strings.HasPrefix(id.Name, "_gx") {
					out = append(out, id.Name)
				}
			}
		}
	case *ast.DeclStmt:
		if g, ok := st.Decl.(*ast.GenDecl); ok && g.Tok != token.TYPE {
			for _, n := range declNames(g) {
				if n != "_" {
					out = append(out, n)
				}
			}
		}
	}
	return out
}

// moveVars moves the cell's var and const declarations that no function or
// type of the cell refers to into the front of the statement block.
func (r *Runner) moveVars(pc *parsedCell) map[ast.Stmt]bool {
	if pc.decls == nil {
		return nil
	}
	isVal := func(d ast.Decl) (*ast.GenDecl, bool) {
		g, ok := d.(*ast.GenDecl)
		return g, ok && (g.Tok == token.VAR || g.Tok == token.CONST)
	}
	refs := map[string]bool{}
	for _, d := range pc.decls.Decls {
		if _, ok := isVal(d); ok {
			continue
		}
		ast.Inspect(d, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				refs[id.Name] = true
			}
			return true
		})
	}
	moved := map[ast.Stmt]bool{}
	var stmts []ast.Stmt
	kept := pc.decls.Decls[:0]
	for _, d := range pc.decls.Decls {
		g, ok := isVal(d)
		if ok {
			used := false
			for _, n := range declNames(g) {
				used = used || refs[n]
			}
			if !used {
				st := &ast.DeclStmt{Decl: g}
				moved[st] = true
				stmts = append(stmts, st)
				continue
			}
		}
		kept = append(kept, d)
	}
	pc.decls.Decls = kept
	if len(stmts) > 0 {
		if pc.body == nil {
			pc.body = &ast.BlockStmt{Lbrace: pcPos(pc)}
		}
		pc.body.List = append(stmts, pc.body.List...)
	}
	return moved
}
