package yaegirunner

// Statement rewrites for what yaegi v0.16.1 lacks: range over int,
// per-iteration loop variables, go statements that report their panics.

import (
	"fmt"
	"go/ast"
	"go/token"
	"strings"

	"github.com/goaccel/goaccel/frontend"
)

// stmts rewrites one statement list: range over int, per-iteration loop
// variables, go statements.
func (r *rewriter) stmts(list []ast.Stmt) []ast.Stmt {
	out := list[:0:0]
	for _, st := range list {
		out = append(out, r.stmt(st))
	}
	return out
}

func (r *rewriter) stmt(st ast.Stmt) ast.Stmt {
	switch s := st.(type) {
	case *ast.LabeledStmt:
		inner := r.stmt(s.Stmt)
		if b, ok := inner.(*ast.BlockStmt); ok && s.Stmt != inner && len(b.List) == 2 {
			// { tmp := n; L: for ... }
			b.List[1] = &ast.LabeledStmt{Label: s.Label, Colon: s.Colon, Stmt: b.List[1]}
			return b
		}
		s.Stmt = inner
		return s
	case *ast.RangeStmt:
		if rs := r.rangeInt(s); rs != nil {
			return rs
		}
		r.loopVarRange(s)
		return s
	case *ast.ForStmt:
		r.loopVarFor(s)
		return s
	case *ast.GoStmt:
		return r.goStmt(s)
	}
	return st
}

// rangeInt rewrites `for i := range n` (n an integer) to a 3-clause loop:
// { _gxnK := n; for i := _gxnK - _gxnK; i < _gxnK; i++ { ... } }
// It returns nil when x is not known to be an integer.
func (r *rewriter) rangeInt(s *ast.RangeStmt) ast.Stmt {
	if s.Value != nil {
		return nil
	}
	switch r.exprKind(s.X) {
	case "int":
	case "func":
		p := r.it.FileSet().Position(s.X.Pos())
		msg := fmt.Sprintf("%s: range over a function (Go 1.23 iterators) is not supported by goaccel's interpreter (yaegi v0.16.1); call the function with a yield callback instead", shortPos(p))
		r.err = &frontend.Error{Name: "CompileError", Value: msg, Traceback: append([]string{msg}, sourceLines(r.pc.src, p.Line, p.Column)...)}
		return nil
	default:
		return nil
	}
	r.tmp++
	n := fmt.Sprintf("_gxn%d", r.tmp)
	key := s.Key
	tok := s.Tok
	if key == nil || isBlank(key) {
		key = ast.NewIdent(fmt.Sprintf("_gxi%d", r.tmp))
		tok = token.DEFINE
	}
	keyCopy := func() ast.Expr {
		if id, ok := key.(*ast.Ident); ok {
			return &ast.Ident{Name: id.Name, NamePos: id.NamePos}
		}
		return key
	}
	loop := &ast.ForStmt{
		For: s.For,
		Init: &ast.AssignStmt{Lhs: []ast.Expr{key}, Tok: tok, TokPos: s.TokPos,
			Rhs: []ast.Expr{&ast.BinaryExpr{X: ast.NewIdent(n), Op: token.SUB, Y: ast.NewIdent(n)}}},
		Cond: &ast.BinaryExpr{X: keyCopy(), Op: token.LSS, Y: ast.NewIdent(n)},
		Post: &ast.IncDecStmt{X: keyCopy(), Tok: token.INC},
		Body: s.Body,
	}
	r.loopVarFor(loop)
	return &ast.BlockStmt{Lbrace: s.For, Rbrace: s.End(), List: []ast.Stmt{
		&ast.AssignStmt{Lhs: []ast.Expr{ast.NewIdent(n)}, Tok: token.DEFINE, Rhs: []ast.Expr{s.X}},
		loop,
	}}
}

func isBlank(x ast.Expr) bool {
	id, ok := x.(*ast.Ident)
	return ok && id.Name == "_"
}

// exprKind guesses the kind of a range operand: "int", "func" or "".
func (r *rewriter) exprKind(x ast.Expr) string {
	if isIntExpr(x, 0) {
		return "int"
	}
	switch x := x.(type) {
	case *ast.FuncLit:
		return "func"
	case *ast.ParenExpr:
		return r.exprKind(x.X)
	case *ast.Ident:
		if x.Obj != nil {
			return ""
		}
		if k := r.cellValueKind(x.Name); k != "" {
			return k
		}
		return r.queryKind(x.Name)
	case *ast.SelectorExpr:
		if id, ok := x.X.(*ast.Ident); ok && id.Obj == nil {
			return r.queryKind(id.Name + "." + x.Sel.Name)
		}
	}
	return ""
}

// queryKind asks the interpreter for the kind of a name earlier cells (or
// this cell's declarations) defined.
func (r *rewriter) queryKind(expr string) string {
	cs := r.rn.state()
	if cs == nil {
		return ""
	}
	kind, _ := r.rn.askInterpreter(r.it, cs, "kind_query/_.go", "_gxrt.Kind("+expr+")")
	return kind
}

var intTypes = map[string]bool{
	"int": true, "int8": true, "int16": true, "int32": true, "int64": true, "uint": true, "uint8": true,
	"uint16": true, "uint32": true, "uint64": true, "uintptr": true, "byte": true, "rune": true,
}

// isIntExpr reports whether x is certainly an integer, from the syntax and
// the parser's resolution of local names.
func isIntExpr(x ast.Expr, depth int) bool {
	if depth > 8 {
		return false
	}
	switch x := x.(type) {
	case *ast.BasicLit:
		return x.Kind == token.INT || x.Kind == token.CHAR
	case *ast.ParenExpr:
		return isIntExpr(x.X, depth+1)
	case *ast.UnaryExpr:
		return (x.Op == token.SUB || x.Op == token.ADD || x.Op == token.XOR) && isIntExpr(x.X, depth+1)
	case *ast.BinaryExpr:
		switch x.Op {
		case token.SHL, token.SHR:
			return isIntExpr(x.X, depth+1)
		case token.ADD, token.SUB, token.MUL, token.QUO, token.REM, token.AND, token.OR, token.XOR, token.AND_NOT:
			return isIntExpr(x.X, depth+1) || isIntExpr(x.Y, depth+1)
		}
	case *ast.CallExpr:
		if id, ok := x.Fun.(*ast.Ident); ok && id.Obj == nil {
			if id.Name == "len" || id.Name == "cap" || intTypes[id.Name] {
				return true
			}
		}
	case *ast.Ident:
		if x.Obj == nil || x.Obj.Decl == nil {
			return false
		}
		switch d := x.Obj.Decl.(type) {
		case *ast.AssignStmt:
			for i, l := range d.Lhs {
				if id, ok := l.(*ast.Ident); ok && id.Name == x.Name && len(d.Rhs) == len(d.Lhs) {
					return isIntExpr(d.Rhs[i], depth+1)
				}
			}
		case *ast.ValueSpec:
			if d.Type != nil {
				id, ok := d.Type.(*ast.Ident)
				return ok && intTypes[id.Name]
			}
			for i, n := range d.Names {
				if n.Name == x.Name && i < len(d.Values) {
					return isIntExpr(d.Values[i], depth+1)
				}
			}
		case *ast.Field:
			id, ok := d.Type.(*ast.Ident)
			return ok && intTypes[id.Name]
		}
	}
	return false
}

// loopVarFor gives a 3-clause loop Go 1.22's per-iteration variables when a
// closure or goroutine in the body may capture them and the body does not
// assign them (then a copy at the top of the body is exact).
func (r *rewriter) loopVarFor(s *ast.ForStmt) {
	as, ok := s.Init.(*ast.AssignStmt)
	if !ok || as.Tok != token.DEFINE || s.Body == nil {
		return
	}
	names := identNames(as.Lhs)
	if len(names) == 0 || !captures(s.Body, false, names) || assigns(s.Body, names) {
		return
	}
	r.prependCopies(s.Body, identObjs(as.Lhs))
}

// loopVarRange does the same for range loops (always exact: the range
// clause assigns the variables afresh each iteration).
func (r *rewriter) loopVarRange(s *ast.RangeStmt) {
	if s.Tok != token.DEFINE || s.Body == nil {
		return
	}
	var lhs []ast.Expr
	if s.Key != nil {
		lhs = append(lhs, s.Key)
	}
	if s.Value != nil {
		lhs = append(lhs, s.Value)
	}
	names := identNames(lhs)
	if len(names) == 0 || !captures(s.Body, true, names) {
		return
	}
	r.prependCopies(s.Body, identObjs(lhs))
}

// identObjs maps the loop variables' names to their parser objects (only
// uses resolved to them are renamed).
func identObjs(xs []ast.Expr) map[string]*ast.Object {
	m := map[string]*ast.Object{}
	for _, x := range xs {
		if id, ok := x.(*ast.Ident); ok && id.Name != "_" && id.Obj != nil {
			m[id.Name] = id.Obj
		}
	}
	return m
}

func identNames(xs []ast.Expr) map[string]bool {
	m := map[string]bool{}
	for _, x := range xs {
		if id, ok := x.(*ast.Ident); ok && id.Name != "_" {
			m[id.Name] = true
		}
	}
	return m
}

// captures reports whether body has a function literal or go statement (or,
// with addr, takes the address of one of names).
func captures(body *ast.BlockStmt, addr bool, names map[string]bool) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit, *ast.GoStmt, *ast.DeferStmt:
			found = true
		case *ast.UnaryExpr:
			if id, ok := n.X.(*ast.Ident); ok && addr && n.Op == token.AND && names[id.Name] {
				found = true
			}
		}
		return !found
	})
	return found
}

// assigns reports whether body assigns, increments or takes the address of
// one of names.
func assigns(body *ast.BlockStmt, names map[string]bool) bool {
	found := false
	hit := func(x ast.Expr) {
		if id, ok := x.(*ast.Ident); ok && names[id.Name] {
			found = true
		}
	}
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if n.Tok != token.DEFINE {
				for _, l := range n.Lhs {
					hit(l)
				}
			}
		case *ast.IncDecStmt:
			hit(n.X)
		case *ast.UnaryExpr:
			if n.Op == token.AND {
				hit(n.X)
			}
		}
		return !found
	})
	return found
}

// prependCopies gives each iteration its own copy of the loop variables:
// `_gxlvN := v` at the top of the body, and the body's uses of v renamed to
// _gxlvN. (A plain `v := v` confuses yaegi v0.16.1's scopes: the loop's
// post statement then increments the copy.)
func (r *rewriter) prependCopies(body *ast.BlockStmt, vars map[string]*ast.Object) {
	var lhs, rhs []ast.Expr
	renames := map[*ast.Object]string{}
	for _, n := range sortedObjKeys(vars) {
		r.tmp++
		nn := fmt.Sprintf("_gxlv%d", r.tmp)
		renames[vars[n]] = nn
		lhs = append(lhs, ast.NewIdent(nn))
		rhs = append(rhs, ast.NewIdent(n))
	}
	ast.Inspect(body, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && id.Obj != nil {
			if nn, ok := renames[id.Obj]; ok {
				id.Name = nn
				id.Obj = nil
			}
		}
		return true
	})
	cp := &ast.AssignStmt{Lhs: lhs, Tok: token.DEFINE, Rhs: rhs}
	body.List = append([]ast.Stmt{cp}, body.List...)
}

func sortedObjKeys(m map[string]*ast.Object) []string {
	b := map[string]bool{}
	for k := range m {
		b[k] = true
	}
	return sortedKeys(b)
}

// goStmt wraps a go statement so that a panic in the goroutine is recovered
// and reported (an unrecovered one would kill the kernel). Arguments are
// still evaluated when the go statement runs.
func (r *rewriter) goStmt(g *ast.GoStmt) ast.Stmt {
	if lit, ok := g.Call.Fun.(*ast.FuncLit); ok {
		lit.Body.List = append([]ast.Stmt{r.recoverStmt()}, lit.Body.List...)
		return g
	}
	var pre []ast.Stmt
	args := make([]ast.Expr, len(g.Call.Args))
	for i, a := range g.Call.Args {
		if isConstLike(a) {
			args[i] = a
			continue
		}
		r.tmp++
		name := fmt.Sprintf("_gxa%d", r.tmp)
		pre = append(pre, &ast.AssignStmt{Lhs: []ast.Expr{ast.NewIdent(name)}, Tok: token.DEFINE, Rhs: []ast.Expr{a}})
		args[i] = ast.NewIdent(name)
	}
	call := &ast.CallExpr{Fun: g.Call.Fun, Lparen: g.Call.Lparen, Args: args, Ellipsis: g.Call.Ellipsis, Rparen: g.Call.Rparen}
	lit := &ast.FuncLit{
		Type: &ast.FuncType{Func: g.Go, Params: &ast.FieldList{}},
		Body: &ast.BlockStmt{Lbrace: g.Go, List: []ast.Stmt{r.recoverStmt(), &ast.ExprStmt{X: call}}, Rbrace: g.End()},
	}
	ng := &ast.GoStmt{Go: g.Go, Call: &ast.CallExpr{Fun: lit, Lparen: g.Call.Rparen, Rparen: g.Call.Rparen}}
	if len(pre) == 0 {
		return ng
	}
	return &ast.BlockStmt{Lbrace: g.Go, List: append(pre, ng), Rbrace: g.End()}
}

func isConstLike(x ast.Expr) bool {
	switch x := x.(type) {
	case *ast.BasicLit:
		return true
	case *ast.ParenExpr:
		return isConstLike(x.X)
	case *ast.UnaryExpr:
		return x.Op != token.AND && x.Op != token.ARROW && isConstLike(x.X)
	case *ast.BinaryExpr:
		return isConstLike(x.X) && isConstLike(x.Y)
	case *ast.Ident:
		return x.Name == "nil" || x.Name == "true" || x.Name == "false"
	}
	return false
}

// recoverStmt is `defer func() { if r := recover(); r != nil { _gxGoPanic(r) } }()`.
func (r *rewriter) recoverStmt() ast.Stmt {
	rv := ast.NewIdent("_gxr")
	return &ast.DeferStmt{Call: &ast.CallExpr{Fun: &ast.FuncLit{
		Type: &ast.FuncType{Params: &ast.FieldList{}},
		Body: &ast.BlockStmt{List: []ast.Stmt{&ast.IfStmt{
			Init: &ast.AssignStmt{Lhs: []ast.Expr{rv}, Tok: token.DEFINE, Rhs: []ast.Expr{&ast.CallExpr{Fun: ast.NewIdent("recover")}}},
			Cond: &ast.BinaryExpr{X: ast.NewIdent("_gxr"), Op: token.NEQ, Y: ast.NewIdent("nil")},
			Body: &ast.BlockStmt{List: []ast.Stmt{&ast.ExprStmt{X: &ast.CallExpr{Fun: ast.NewIdent("_gxGoPanic"), Args: []ast.Expr{ast.NewIdent("_gxr")}}}}},
		}}},
	}}}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && strings.Compare(out[j-1], out[j]) > 0; j-- {
			out[j-1], out[j] = out[j], out[j-1]
		}
	}
	return out
}

// cellValueKind looks for a const or var name declared by this cell.
func (r *rewriter) cellValueKind(name string) string {
	var specs []*ast.ValueSpec
	collect := func(d ast.Decl) {
		if g, ok := d.(*ast.GenDecl); ok {
			for _, s := range g.Specs {
				if vs, ok := s.(*ast.ValueSpec); ok {
					specs = append(specs, vs)
				}
			}
		}
	}
	if r.pc.decls != nil {
		for _, d := range r.pc.decls.Decls {
			collect(d)
		}
	}
	if r.pc.body != nil {
		for _, st := range r.pc.body.List {
			if ds, ok := st.(*ast.DeclStmt); ok {
				collect(ds.Decl)
			}
		}
	}
	for _, vs := range specs {
		for i, n := range vs.Names {
			if n.Name != name {
				continue
			}
			if vs.Type != nil {
				if id, ok := vs.Type.(*ast.Ident); ok && intTypes[id.Name] {
					return "int"
				}
				return ""
			}
			if i < len(vs.Values) && isIntExpr(vs.Values[i], 0) {
				return "int"
			}
		}
	}
	return ""
}
