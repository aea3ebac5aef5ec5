package yaegirunner

import (
	"context"
	"fmt"
	"go/ast"
	"go/token"
	"image"
	"reflect"
	"strconv"
	"strings"

	"github.com/traefik/yaegi/interp"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook/internal/session"
)

// This file is the cell's trailing result: choosing how to compile a
// trailing expression so that its value can be shown, and formatting that
// value.

type showMode int

const (
	showNone   showMode = iota // no value: the expression runs as a statement
	showSingle                 // one value, assigned to _gxv and formatted by showValue
	showMulti                  // several values, shown by _gxShow
)

// compileBody compiles the cell's statement block. When the block ends with
// the expression trailing, it is tried, in order, as a single value (assigned
// to the global _gxv, then formatted by showValue), several values
// (_gxShow(f())), and no value (a call run as a statement), skipping the
// forms its known result count rules out; mode tells which form compiled.
func (r *Runner) compileBody(it *interp.Interpreter, pc *parsedCell, rw *rewriter, body *ast.BlockStmt, trailing ast.Expr) (*interp.Program, showMode, error) {
	if trailing == nil {
		prog, err := compileAST(it, body)
		return prog, showNone, err
	}
	last := len(body.List) - 1
	variants := []struct {
		mode showMode
		st   ast.Stmt
	}{
		{showSingle, &ast.AssignStmt{Lhs: []ast.Expr{ast.NewIdent("_gxv")}, Tok: token.DEFINE, TokPos: trailing.Pos(), Rhs: []ast.Expr{trailing}}},
		{showMulti, &ast.ExprStmt{X: &ast.CallExpr{Fun: ast.NewIdent("_gxShow"), Args: []ast.Expr{trailing}}}},
		{showNone, &ast.ExprStmt{X: trailing}},
	}
	if r.quietCall(pc, trailing) {
		variants = variants[2:]
	} else {
		switch resultCount(r, pc, trailing) {
		case 0:
			variants = variants[2:]
		case -1, 1:
		default:
			variants = variants[1:]
		}
	}
	// First the plain statement: yaegi accepts `_gxv := undefinedName`
	// silently, so errors are taken from the plain form. When every name is
	// known there is nothing yaegi could silently accept: skip that compile.
	body.List[last] = &ast.ExprStmt{X: trailing}
	if !r.namesKnown(it, trailing, rw.cellNames) {
		if _, err := compileAST(it, body); err != nil {
			return nil, showNone, err
		}
	}
	var err error
	for _, v := range variants {
		body.List[last] = v.st
		var prog *interp.Program
		if prog, err = compileAST(it, body); err == nil {
			return prog, v.mode, nil
		}
	}
	return nil, showNone, err
}

// showValue formats _gxv into the cell's result with showProbes.
func (r *Runner) showValue(ctx context.Context, it *interp.Interpreter, cs *cellState) {
	// Globals builds a map of every global: read _gxv from it once.
	v := it.Globals()["_gxv"]
	methods := r.log.MethodNames()
	jsonText, text := false, false
	if t, ok := textWithoutProbe(v, methods); ok {
		cs.setResult("text/plain", t)
		text = true
	}
	skip := probeFilter(v, methods)
	for i, probe := range showProbes {
		if skip(probe) {
			continue
		}
		if jsonText && strings.Contains(probe, "_gxrt.JSON(") {
			continue
		}
		if text && strings.HasPrefix(probe, "_gxrt.Text(") {
			continue
		}
		prog, err := compileProbe(it, "goaccel/_.go", probe)
		if err != nil {
			continue
		}
		cs.takeTrace()
		err = r.runProgram(ctx, it, prog)
		if strings.HasPrefix(probe, "_gxrt.Text(") {
			if err != nil && i > 0 {
				cs.setResult("text/plain", "<value could not be formatted: "+err.Error()+">")
			}
			text = err == nil || i > 0
		}
		cs.takeTrace()
		if strings.Contains(probe, "JSONText") && err == nil {
			jsonText = true
		}
	}
}

// Evaluate evaluates one expression (user_expressions), formatted as a
// cell's trailing expression is.
func (r *Runner) Evaluate(ctx context.Context, c *session.Cell, expr string) (*session.Result, *frontend.Error) {
	b, err := r.evalExpr(ctx, r.state(), expr)
	if err != nil {
		return nil, err
	}
	return &session.Result{Bundle: b}, nil
}

// evalExpr evaluates one expression (user_expressions) and returns its
// MIME bundle, formatted as a cell's trailing expression is.
func (r *Runner) evalExpr(ctx context.Context, cs *cellState, expr string) (frontend.MIMEBundle, *frontend.Error) {
	it := r.interp()
	if strings.Contains(expr, "\n") {
		return nil, &frontend.Error{Name: "SyntaxError", Value: "a user expression must be one line: " + expr}
	}
	var lastErr error
	for _, v := range []struct {
		mode showMode
		code string
	}{{showSingle, "_gxv := " + expr}, {showMulti, "_gxShow(" + expr + ")"}} {
		body, err := parseProbe(it, "user_expression/_.go", v.code)
		if err != nil {
			return nil, compileError(err, expr)
		}
		if len(body.List) != 1 {
			return nil, &frontend.Error{Name: "SyntaxError", Value: "not a single expression: " + expr}
		}
		prog, err := compileAST(it, body)
		if err != nil {
			lastErr = err
			continue
		}
		cs.takeResult()
		if err := r.runProgram(ctx, it, prog); err != nil {
			if session.IsCanceled(err) {
				return nil, session.ErrInterrupted()
			}
			return nil, r.toError(err, expr, "")
		}
		if v.mode == showSingle {
			r.showValue(ctx, it, cs)
		}
		return cs.takeResult(), nil
	}
	return nil, r.toError(lastErr, expr, "CompileError")
}

// funcResults is how many results a function of type ft returns.
func funcResults(ft *ast.FuncType) int {
	if ft.Results == nil {
		return 0
	}
	return ft.Results.NumFields()
}

// resultAgreement is the result count that all the candidates for a call
// agree on (the methods of one name, when the receiver's type is unknown).
type resultAgreement struct {
	n        int
	seen     bool
	conflict bool
}

// add records a candidate's count; false once two candidates disagree.
func (a *resultAgreement) add(n int) bool {
	if a.seen && a.n != n {
		a.conflict = true
	}
	if !a.seen {
		a.n, a.seen = n, true
	}
	return !a.conflict
}

// count is the agreed count, or -1 when there was no candidate or they
// disagree.
func (a *resultAgreement) count() int {
	if !a.seen || a.conflict {
		return -1
	}
	return a.n
}

// resultCount returns how many results a call returns when it can tell
// (functions of this or earlier cells, functions of compiled packages), or
// -1. yaegi v0.16.1 accepts `v := f()` for an f with two results, so the
// count must be known before choosing how to show the value.
func resultCount(r *Runner, pc *parsedCell, x ast.Expr) int {
	call, ok := x.(*ast.CallExpr)
	if !ok {
		return -1
	}
	switch fn := call.Fun.(type) {
	case *ast.Ident:
		if pc.decls != nil {
			for _, d := range pc.decls.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == fn.Name {
					return funcResults(fd.Type)
				}
			}
		}
		return r.log.FuncResults(fn.Name)
	case *ast.SelectorExpr:
		id, ok := fn.X.(*ast.Ident)
		if !ok {
			// a.b.M(): probe the receiver chain when it is rooted at a
			// global variable (no calls, so evaluating it is harmless).
			if chain, root := selectorChain(fn.X); chain != "" && root != "" {
				if n := r.methodResultCount(pc, chain, fn.Sel.Name, root); n >= 0 {
					return n
				}
			}
			return r.methodNameResultCount(fn.Sel.Name)
		}
		if id.Name == "_gxrt" {
			if v, ok := r.runtimeSymbols()[rtPath+"/gxrt"][fn.Sel.Name]; ok {
				return v.Type().NumOut()
			}
			return -1
		}
		if id.Obj != nil { // a variable this cell declares
			if n := r.methodResultCount(pc, id.Name, fn.Sel.Name, id.Name); n >= 0 {
				return n
			}
			return r.methodNameResultCount(fn.Sel.Name)
		}
		p, imported := r.log.Imported(id.Name)
		v := r.opts.Packages.symbol(p, fn.Sel.Name)
		if !imported { // a variable of an earlier cell
			return r.methodResultCount(pc, id.Name, fn.Sel.Name, id.Name)
		}
		if v.IsValid() && v.Kind() == reflect.Func {
			return v.Type().NumOut()
		}
	case *ast.FuncLit:
		return funcResults(fn.Type)
	}
	return -1
}

// methodResultCount tells how many results recv.method(...) returns, for a
// variable recv: the interpreter reports it for compiled types (through
// reflect), and the declarations of this cell and the log for methods cells
// declared (when every method of that name agrees). -1 when it cannot tell.
func (r *Runner) methodResultCount(pc *parsedCell, recv, method, root string) int {
	if n := r.localMethodResultCount(pc, recv, method); n >= 0 {
		return n
	}
	// Probe only names that are global variables: a probe that fails to
	// compile can leave yaegi v0.16.1's global frame inconsistent.
	if cs, it := r.state(), r.interp(); cs != nil && it != nil {
		if _, isGlobal := it.Globals()[root]; isGlobal {
			if outs, ok := r.askInterpreter(it, cs, "outs_query/_.go", "_gxrt.Outs("+recv+", "+strconv.Quote(method)+")"); ok {
				if n, err := strconv.Atoi(outs); err == nil {
					return n
				}
			}
		}
	}
	var a resultAgreement
	if pc.decls != nil {
		for _, d := range pc.decls.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil && fd.Name.Name == method && !a.add(funcResults(fd.Type)) {
				return -1
			}
		}
	}
	r.log.MethodResults(method, a.add)
	return a.count()
}

// localMethodResultCount handles a receiver this very cell declares from a
// compiled package's function (`h := display.HTML(...)`): the function's
// result type, known through reflect, tells the method's results.
func (r *Runner) localMethodResultCount(pc *parsedCell, recv, method string) int {
	var typ reflect.Type
	visit := func(n ast.Node) bool {
		if typ != nil {
			return false
		}
		var lhs, rhs []ast.Expr
		switch v := n.(type) {
		case *ast.AssignStmt:
			lhs, rhs = v.Lhs, v.Rhs
		case *ast.ValueSpec:
			for _, id := range v.Names {
				lhs = append(lhs, id)
			}
			rhs = v.Values
		default:
			return true
		}
		for i, l := range lhs {
			id, ok := l.(*ast.Ident)
			if !ok || id.Name != recv {
				continue
			}
			// a, b := f(), g() takes result 0 of the i-th call;
			// a, b := f() takes result i of the one call.
			var call *ast.CallExpr
			out := i
			if len(rhs) == len(lhs) {
				call, _ = rhs[i].(*ast.CallExpr)
				out = 0
			} else if len(rhs) == 1 {
				call, _ = rhs[0].(*ast.CallExpr)
			}
			if call == nil {
				continue
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				continue
			}
			pkg, ok := sel.X.(*ast.Ident)
			if !ok {
				continue
			}
			path, ok := r.log.Imported(pkg.Name)
			var fv reflect.Value
			if ok {
				fv = r.opts.Packages.symbol(path, sel.Sel.Name)
			}
			if fv.IsValid() && fv.Kind() == reflect.Func && out < fv.Type().NumOut() {
				typ = fv.Type().Out(out)
			}
		}
		return typ == nil
	}
	if pc.body != nil {
		ast.Inspect(pc.body, visit)
	}
	if pc.decls != nil {
		ast.Inspect(pc.decls, visit)
	}
	if typ == nil {
		return -1
	}
	m, ok := typ.MethodByName(method)
	if !ok {
		return -1
	}
	return m.Type.NumOut()
}

// selectorChain renders a.b.c (identifiers and field selectors only) and
// returns it with its root identifier; "" when x is anything else.
func selectorChain(x ast.Expr) (chain, root string) {
	switch x := x.(type) {
	case *ast.Ident:
		return x.Name, x.Name
	case *ast.SelectorExpr:
		c, r := selectorChain(x.X)
		if c == "" {
			return "", ""
		}
		return c + "." + x.Sel.Name, r
	}
	return "", ""
}

// methodNameResultCount is the last resort for x.M() when x's type is
// unknown: if every method called M of the imported compiled packages' types
// and of the cells' types returns the same number of results, that is the
// answer. (yaegi v0.16.1 compiles `v := x.M()` for a void M and fails when
// it runs, so guessing "one result" is not safe.)
func (r *Runner) methodNameResultCount(method string) int {
	var a resultAgreement
	if !r.addCompiledMethodResults(method, &a) || !r.log.MethodResults(method, a.add) {
		return -1
	}
	return a.count()
}

// addCompiledMethodResults adds the result counts of the methods called
// method of the exported types (and interfaces) of the imported compiled
// packages to a; false once they disagree.
func (r *Runner) addCompiledMethodResults(method string, a *resultAgreement) bool {
	for _, p := range r.log.Imports() {
		for _, v := range r.opts.Packages.symbols(p) {
			if !v.IsValid() || v.Kind() != reflect.Pointer || !v.IsNil() {
				continue
			}
			t := v.Type() // *T for an exported type T
			if m, ok := t.MethodByName(method); ok && !a.add(m.Type.NumOut()) {
				return false
			}
			if t.Elem().Kind() == reflect.Interface {
				if m, ok := t.Elem().MethodByName(method); ok && !a.add(m.Type.NumOut()) {
					return false
				}
			}
		}
	}
	return true
}

// quietCall reports a trailing call whose value nobody wants to see as the
// cell's result: fmt.Println's byte count and error, the handle that
// display.HTML returns (the display already shows the content).
func (r *Runner) quietCall(pc *parsedCell, x ast.Expr) bool {
	call, ok := x.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	if !ok || pkg.Obj != nil {
		return false
	}
	switch r.importPath(pkg.Name, pc) {
	case "fmt":
		return strings.HasPrefix(sel.Sel.Name, "Print") || strings.HasPrefix(sel.Sel.Name, "Fprint")
	case "github.com/goaccel/goaccel/display":
		return true
	}
	return false
}

// probeFilter tells which show probes cannot apply to v, the value of _gxv, so
// a plain value costs one compile instead of one per probe. A probe calling
// method M is needed only if the value's compiled type has M or some cell
// declared a method M (declared, from loggedMethodNames: interpreted types
// keep their methods out of reflect).
func probeFilter(v reflect.Value, declared map[string]bool) func(probe string) bool {
	if !v.IsValid() {
		return func(string) bool { return false }
	}
	t := v.Type()
	has := func(m string) bool {
		if declared[m] {
			return true
		}
		if _, ok := t.MethodByName(m); ok {
			return true
		}
		if t.Kind() == reflect.Interface {
			return true // the dynamic value may have it
		}
		_, ok := reflect.PointerTo(t).MethodByName(m)
		return ok
	}
	imageType := reflect.TypeOf((*image.Image)(nil)).Elem()
	return func(probe string) bool {
		switch {
		case strings.Contains(probe, `_gxv+""`):
			return t.Kind() != reflect.String && t.Kind() != reflect.Interface
		case strings.HasPrefix(probe, "_gxrt.Image("):
			return !(t.Implements(imageType) || t.Kind() == reflect.Interface || declared["ColorModel"])
		}
		if i := strings.Index(probe, "_gxv."); i >= 0 {
			name := probe[i+len("_gxv."):]
			name = name[:strings.Index(name, "(")]
			return !has(name)
		}
		return false
	}
}

// namesKnown reports whether every identifier x uses (outside selectors'
// field names) is predeclared, declared by this cell, or a global, import or
// declaration of an earlier cell: then `_gxv := x` cannot hide an
// undefined name, which yaegi would accept silently.
func (r *Runner) namesKnown(it *interp.Interpreter, x ast.Expr, cellNames map[string]bool) bool {
	sels := map[*ast.Ident]bool{}
	ast.Inspect(x, func(n ast.Node) bool {
		if se, ok := n.(*ast.SelectorExpr); ok {
			sels[se.Sel] = true
		}
		return true
	})
	var globals map[string]reflect.Value
	known := true
	ast.Inspect(x, func(n ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if !ok || sels[id] || !known {
			return known
		}
		switch {
		case id.Name == "_", isUniverse(id.Name), cellNames[id.Name], r.log.HasName(id.Name):
			return true
		}
		_, imp := r.log.Imported(id.Name)
		if imp {
			return true
		}
		if globals == nil {
			globals = it.Globals()
		}
		if _, ok := globals[id.Name]; ok {
			return true
		}
		known = false
		return false
	})
	return known
}

// textWithoutProbe formats v, the value of _gxv, in compiled code, saving a compile, when that
// gives what fmt inside the interpreter would: no cell declared a method fmt
// looks for (declared, from loggedMethodNames: interpreted methods are
// invisible to compiled fmt).
func textWithoutProbe(v reflect.Value, declared map[string]bool) (string, bool) {
	if declared["String"] || declared["Error"] || declared["Format"] || declared["GoString"] {
		return "", false
	}
	if !v.IsValid() {
		return "", false
	}
	if v.Kind() == reflect.Interface && v.IsNil() {
		return "<nil>", true
	}
	if v.Kind() == reflect.String {
		if _, has := v.Type().MethodByName("String"); !has {
			return strconv.Quote(v.String()), true
		}
	}
	return fmt.Sprint(v.Interface()), true
}
