package yaegirunner

import (
	"go/ast"
	"go/token"
	"strings"

	"github.com/traefik/yaegi/interp"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook/internal/session"
)

// mainName is what a cell's func main is renamed to (yaegi would run a
// function called main on every later Eval).
const mainName = "_gxMain"

// rewriter adapts a parsed cell to what yaegi v0.16.1 runs: see LANGUAGE.md.
type rewriter struct {
	rn          *Runner
	it          *interp.Interpreter
	pc          *parsedCell
	cellNames   map[string]bool
	definesMain bool
	tmp         int
	err         *frontend.Error
}

func newRewriter(rn *Runner, it *interp.Interpreter, pc *parsedCell) *rewriter {
	return &rewriter{rn: rn, it: it, pc: pc}
}

// rewriteFile rewrites the cell's declarations.
func (r *rewriter) rewriteFile(f *ast.File) *frontend.Error {
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "main" {
			r.definesMain = true
		}
	}
	pkg := f.Name.Name
	r.rewrite(f)
	r.guardRecursion(f)
	f.Name.Name = pkg // the package clause is not an identifier to rename
	return r.err
}

// guardRecursion makes endless recursion an error instead of a crash: Go
// kills the whole process when a goroutine's stack overflows, which no
// recover can stop. Every declared function or method that calls a function
// or method of the notebook (itself included) starts with
//
//	_gxrt.Enter()
//	defer _gxrt.Leave()
//
// which counts nested calls and panics past a limit. Leaf functions, the hot
// ones, get no guard.
func (r *rewriter) guardRecursion(root ast.Node) {
	names := r.notebookCallables()
	guard := func(body *ast.BlockStmt) {
		if body == nil || !callsAny(body, names) {
			return
		}
		body.List = append([]ast.Stmt{
			&ast.ExprStmt{X: &ast.CallExpr{Fun: &ast.SelectorExpr{X: ast.NewIdent("_gxrt"), Sel: ast.NewIdent("Enter")}}},
			&ast.DeferStmt{Call: &ast.CallExpr{Fun: &ast.SelectorExpr{X: ast.NewIdent("_gxrt"), Sel: ast.NewIdent("Leave")}}},
		}, body.List...)
	}
	ast.Inspect(root, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			guard(n.Body)
		case *ast.FuncLit: // recursion through a variable: f = func(...) { f(...) }
			guard(n.Body)
		}
		return true
	})
}

// notebookCallables are the names a call can reach notebook code through:
// functions and methods, and variables (which may hold function literals),
// of this cell and earlier ones.
func (r *rewriter) notebookCallables() map[string]bool {
	names := map[string]bool{}
	for n := range r.cellNames {
		names[n] = true
	}
	if r.pc.decls != nil {
		for _, d := range r.pc.decls.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				names[fd.Name.Name] = true
			}
		}
	}
	for _, d := range r.rn.log.Declarations() {
		switch d.Kind {
		case session.KindFunc, session.KindMethod:
			names[d.Name[strings.LastIndex(d.Name, ".")+1:]] = true
		case session.KindVar:
			names[d.Name] = true
			for _, n := range d.Names {
				names[n] = true
			}
		}
	}
	return names
}

// callsAny reports whether body calls one of names, directly (f(...)) or as
// a method (x.f(...)); function literals inside count too.
func callsAny(body *ast.BlockStmt, names map[string]bool) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || found {
			return !found
		}
		switch fn := call.Fun.(type) {
		case *ast.Ident:
			found = names[fn.Name]
		case *ast.SelectorExpr:
			found = names[fn.Sel.Name]
		}
		return !found
	})
	return found
}

// rewriteBody rewrites the cell's statements.
func (r *rewriter) rewriteBody(b *ast.BlockStmt) *frontend.Error {
	r.commaOK(b)
	if r.err != nil {
		return r.err
	}
	r.rewrite(b)
	r.guardRecursion(b)
	return r.err
}

// commaOK works around yaegi v0.16.1's comma-ok forms outside functions
// (the cell's own statements): `v, ok := x.(T)`, `v, ok := m[k]` and
// `switch t := x.(type)` fail there ("nil type", "undefined: v"), while a
// two-value assignment of two expressions works. So
//
//	v, ok := x.(T)  becomes  v, ok := func() T { a, _ := x.(T); return a }(), func() bool { _, b := x.(T); return b }()
//	v, ok := m[k]   becomes  v, ok := m[k], func() bool { _, b := m[k]; return b }()
//
// (x, m and k are evaluated twice, so only side-effect-free operands are
// rewritten), and a binding type switch runs inside func() { ... }().
// Function bodies are left alone: yaegi handles these forms there.
func (r *rewriter) commaOK(root ast.Node) {
	ast.Inspect(root, func(n ast.Node) bool {
		if r.err != nil {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.AssignStmt:
			r.commaOKAssign(n)
		case *ast.BlockStmt:
			wrapTypeSwitches(n.List)
		case *ast.CaseClause:
			wrapTypeSwitches(n.Body)
		case *ast.CommClause:
			wrapTypeSwitches(n.Body)
		}
		return true
	})
}

func (r *rewriter) commaOKAssign(as *ast.AssignStmt) {
	if len(as.Lhs) != 2 || len(as.Rhs) != 1 {
		return
	}
	okFunc := func(x ast.Expr) ast.Expr {
		return &ast.CallExpr{Fun: &ast.FuncLit{
			Type: &ast.FuncType{Params: &ast.FieldList{}, Results: &ast.FieldList{List: []*ast.Field{{Type: ast.NewIdent("bool")}}}},
			Body: &ast.BlockStmt{List: []ast.Stmt{
				&ast.AssignStmt{Lhs: []ast.Expr{ast.NewIdent("_"), ast.NewIdent("_gxok")}, Tok: token.DEFINE, Rhs: []ast.Expr{x}},
				&ast.ReturnStmt{Results: []ast.Expr{ast.NewIdent("_gxok")}},
			}},
		}}
	}
	switch x := as.Rhs[0].(type) {
	case *ast.TypeAssertExpr:
		if x.Type == nil || !sideEffectFree(x.X) {
			return
		}
		value := &ast.CallExpr{Fun: &ast.FuncLit{
			Type: &ast.FuncType{Params: &ast.FieldList{}, Results: &ast.FieldList{List: []*ast.Field{{Type: x.Type}}}},
			Body: &ast.BlockStmt{List: []ast.Stmt{
				&ast.AssignStmt{Lhs: []ast.Expr{ast.NewIdent("_gxv0"), ast.NewIdent("_")}, Tok: token.DEFINE, Rhs: []ast.Expr{&ast.TypeAssertExpr{X: x.X, Type: x.Type}}},
				&ast.ReturnStmt{Results: []ast.Expr{ast.NewIdent("_gxv0")}},
			}},
		}}
		as.Rhs = []ast.Expr{value, okFunc(&ast.TypeAssertExpr{X: x.X, Type: x.Type})}
	case *ast.IndexExpr:
		if !sideEffectFree(x.X) || !sideEffectFree(x.Index) {
			return
		}
		as.Rhs = []ast.Expr{x, okFunc(&ast.IndexExpr{X: x.X, Index: x.Index})}
	case *ast.UnaryExpr:
		if x.Op == token.ARROW {
			r.err = &frontend.Error{Name: "CompileError", Value: "`v, ok := <-ch` outside a function is not supported by the interpreter (yaegi v0.16.1); receive inside a function, r.g. func() { v, ok := <-ch; ... }()"}
		}
	}
}

// wrapTypeSwitches runs each binding type switch of list inside a func
// literal, unless it branches out of itself (continue, goto, labels, return).
func wrapTypeSwitches(list []ast.Stmt) {
	for i, st := range list {
		ts, ok := st.(*ast.TypeSwitchStmt)
		if !ok {
			continue
		}
		if _, binds := ts.Assign.(*ast.AssignStmt); !binds || branchesOut(ts) {
			continue
		}
		list[i] = &ast.ExprStmt{X: &ast.CallExpr{Fun: &ast.FuncLit{
			Type: &ast.FuncType{Params: &ast.FieldList{}},
			Body: &ast.BlockStmt{List: []ast.Stmt{ts}},
		}}}
	}
}

func branchesOut(n ast.Node) bool {
	out := false
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ReturnStmt:
			out = true
		case *ast.BranchStmt:
			if n.Tok == token.CONTINUE || n.Tok == token.GOTO || n.Label != nil {
				out = true
			}
		}
		return !out
	})
	return out
}

// sideEffectFree reports an expression that may be evaluated twice:
// identifiers, literals, selectors, indexing and arithmetic on those.
func sideEffectFree(x ast.Expr) bool {
	ok := true
	ast.Inspect(x, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr, *ast.FuncLit, *ast.CompositeLit:
			ok = false
		case *ast.UnaryExpr:
			if n.Op == token.ARROW {
				ok = false
			}
		}
		return ok
	})
	return ok
}

func (r *rewriter) rewrite(root ast.Node) {
	r.renameMain(root)
	r.builtins(root)
	r.launchCalls(root)
	ast.Inspect(root, func(n ast.Node) bool {
		if r.err != nil {
			return false
		}
		switch n := n.(type) {
		case *ast.BlockStmt:
			n.List = r.stmts(n.List)
		case *ast.CaseClause:
			n.Body = r.stmts(n.Body)
		case *ast.CommClause:
			n.Body = r.stmts(n.Body)
		}
		return true
	})
}

// renameMain renames every identifier main (not a field or method name
// after a dot) to mainName.
func (r *rewriter) renameMain(root ast.Node) {
	sels := map[*ast.Ident]bool{}
	ast.Inspect(root, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			sels[n.Sel] = true
		case *ast.Ident:
			if n.Name == "main" && !sels[n] {
				n.Name = mainName
			}
		}
		return true
	})
}

// isBuiltinCall reports whether call calls the predeclared name (not one the
// cell or an earlier cell declared).
func (r *rewriter) isBuiltinCall(call *ast.CallExpr, name string) bool {
	id, ok := call.Fun.(*ast.Ident)
	if !ok || id.Name != name || id.Obj != nil {
		return false
	}
	return !r.cellNames[name] && !r.rn.log.HasName(name)
}

// builtins replaces min, max and clear, which yaegi v0.16.1 lacks.
func (r *rewriter) builtins(root ast.Node) {
	ast.Inspect(root, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		for _, b := range []struct{ name, helper string }{{"min", "_gxMin"}, {"max", "_gxMax"}} {
			if !r.isBuiltinCall(call, b.name) || len(call.Args) == 0 {
				continue
			}
			if len(call.Args) == 1 {
				// min(x) is x; keep a call shape: _gxMin(x, x).
				call.Fun = ast.NewIdent(b.helper)
				call.Args = []ast.Expr{call.Args[0], call.Args[0]}
				continue
			}
			if allConst(call.Args) && anyFloat(call.Args) {
				// Untyped constants: make them float64 (yaegi's generic
				// inference does not default them).
				for i, a := range call.Args {
					call.Args[i] = &ast.CallExpr{Fun: ast.NewIdent("float64"), Args: []ast.Expr{a}}
				}
			}
			acc := call.Args[0]
			for _, a := range call.Args[1 : len(call.Args)-1] {
				acc = &ast.CallExpr{Fun: ast.NewIdent(b.helper), Args: []ast.Expr{acc, a}, Lparen: call.Lparen, Rparen: call.Rparen}
			}
			call.Fun = &ast.Ident{Name: b.helper, NamePos: call.Fun.Pos()}
			call.Args = []ast.Expr{acc, call.Args[len(call.Args)-1]}
		}
		if r.isBuiltinCall(call, "clear") && len(call.Args) == 1 {
			call.Fun = &ast.SelectorExpr{X: ast.NewIdent("_gxrt"), Sel: ast.NewIdent("Clear")}
		}
		return true
	})
}

func allConst(xs []ast.Expr) bool {
	for _, x := range xs {
		if !isConstLike(x) {
			return false
		}
	}
	return true
}

func anyFloat(xs []ast.Expr) bool {
	found := false
	for _, x := range xs {
		ast.Inspect(x, func(n ast.Node) bool {
			if b, ok := n.(*ast.BasicLit); ok && b.Kind == token.FLOAT {
				found = true
			}
			return true
		})
	}
	return found
}
