package eval

import (
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"reflect"
)

// opOf maps an assignment operator to its binary operator.
var opOf = map[token.Token]token.Token{
	token.ADD_ASSIGN: token.ADD, token.SUB_ASSIGN: token.SUB, token.MUL_ASSIGN: token.MUL,
	token.QUO_ASSIGN: token.QUO, token.REM_ASSIGN: token.REM, token.AND_ASSIGN: token.AND,
	token.OR_ASSIGN: token.OR, token.XOR_ASSIGN: token.XOR, token.AND_NOT_ASSIGN: token.AND_NOT,
	token.SHL_ASSIGN: token.SHL, token.SHR_ASSIGN: token.SHR,
}

// assign compiles an assignment (a top-level definition is one: check
// turned x := v into x = v to the variable it hoisted).
func (c *compiler) assign(s *ast.AssignStmt) func() {
	switch s.Tok {
	case token.ASSIGN:
		if len(s.Lhs) == 1 && len(s.Rhs) == 1 {
			return c.assign1(s.Lhs[0], s.Rhs[0])
		}
		return c.assignTuple(s)
	case token.DEFINE:
		c.fail(s, "local variables are compiled")
	}
	op, ok := opOf[s.Tok]
	if !ok {
		c.fail(s, "assignment %s", s.Tok)
	}
	return c.opAssign(s, s.Lhs[0], op, s.Rhs[0])
}

func isBlank(e ast.Expr) bool {
	id, ok := ast.Unparen(e).(*ast.Ident)
	return ok && id.Name == "_"
}

// lhsType is the type of an assignment's target.
func (c *compiler) lhsType(e ast.Expr) types.Type {
	if id, ok := ast.Unparen(e).(*ast.Ident); ok {
		if v, ok := c.info.Uses[id].(*types.Var); ok {
			return v.Type()
		}
	}
	tv, ok := c.info.Types[e]
	if !ok {
		c.fail(e, "assignment target")
	}
	return tv.Type
}

// assign1 compiles lhs = rhs. As compiled Go does, it evaluates rhs first,
// then the operands of lhs (and its bounds or nil checks), then stores.
func (c *compiler) assign1(lhs, rhs ast.Expr) func() {
	if isBlank(lhs) {
		v := c.discard(rhs)
		return func() { v() }
	}
	if c.hasCall(lhs) {
		c.fail(lhs, "call in an assignment's target")
	}
	v := c.exprTo(rhs, c.lhsType(lhs))
	if ix, ok := ast.Unparen(lhs).(*ast.IndexExpr); ok {
		if mt, ok := c.info.Types[ix.X].Type.Underlying().(*types.Map); ok {
			m, key := c.expr(ix.X), c.exprTo(ix.Index, mt.Key())
			c.ordered(ix.X, ix.Index)
			p, pos := c.p, ix.Lbrack
			return func() {
				x := v()
				mv, k := m(), key()
				p.at(pos)
				setMapIndex(mv, k, x)
			}
		}
	}
	dst := c.expr(lhs)
	return func() {
		x := v()
		dst().Set(x)
	}
}

// setMapIndex is m[k] = x.
func setMapIndex(m, k, x reflect.Value) {
	if m.IsNil() {
		nilMap()
	}
	m.SetMapIndex(k, x)
}

// discard compiles an expression evaluated for its effects (_ = x).
func (c *compiler) discard(e ast.Expr) val {
	tv := c.info.Types[e]
	if tv.Value != nil || tv.IsNil() {
		return func() reflect.Value { return reflect.Value{} }
	}
	return c.expr(e)
}

// assignTuple compiles a, b = x, y and a, b = f(): the targets must be
// variables (or blank), the values are all computed before any is
// stored.
func (c *compiler) assignTuple(s *ast.AssignStmt) func() {
	type target struct {
		store func(reflect.Value)
	}
	targets := make([]func(reflect.Value), len(s.Lhs))
	for i, l := range s.Lhs {
		if isBlank(l) {
			continue
		}
		id, ok := ast.Unparen(l).(*ast.Ident)
		if !ok {
			c.fail(l, "assignment to several targets that are not variables")
		}
		v, ok := c.info.Uses[id].(*types.Var)
		if !ok {
			c.fail(l, "assignment target")
		}
		dst := c.varRef(id, v)
		targets[i] = func(x reflect.Value) { dst().Set(x) }
	}
	var values func() []reflect.Value
	if len(s.Rhs) == 1 {
		call, ok := ast.Unparen(s.Rhs[0]).(*ast.CallExpr)
		tup, isTuple := c.info.Types[s.Rhs[0]].Type.(*types.Tuple)
		if !ok || !isTuple || tup.Len() != len(s.Lhs) {
			c.fail(s, "comma-ok assignment")
		}
		f := c.callMulti(call)
		convs := make([]func(reflect.Value) reflect.Value, len(s.Lhs))
		for i, l := range s.Lhs {
			if !isBlank(l) {
				convs[i] = c.assignConv(l, tup.At(i).Type(), c.lhsType(l))
			}
		}
		values = func() []reflect.Value {
			vs := f()
			for i, conv := range convs {
				if conv != nil {
					vs[i] = conv(vs[i])
				}
			}
			return vs
		}
	} else {
		c.ordered(s.Rhs...)
		vals := make([]val, len(s.Rhs))
		for i, r := range s.Rhs {
			if isBlank(s.Lhs[i]) {
				vals[i] = c.discard(r)
			} else {
				vals[i] = c.exprTo(r, c.lhsType(s.Lhs[i]))
				c.newable(c.rtype(c.lhsType(s.Lhs[i])))
			}
		}
		values = func() []reflect.Value {
			out := make([]reflect.Value, len(vals))
			for i, v := range vals {
				x := v()
				if x.CanAddr() {
					// A variable's storage: copy it before anything is
					// stored (a, b = b, a).
					cp := reflect.New(x.Type()).Elem()
					cp.Set(x)
					x = cp
				}
				out[i] = x
			}
			return out
		}
	}
	return func() {
		vs := values()
		for i, t := range targets {
			if t != nil {
				t(vs[i])
			}
		}
	}
}

// opAssign compiles lhs op= rhs, and lhs++ / lhs-- (rhs nil). As compiled
// Go does, the calls of rhs run first; then lhs is read (its bounds
// checked), the rest of rhs computed, and the result stored.
func (c *compiler) opAssign(s ast.Node, lhs ast.Expr, op token.Token, rhs ast.Expr) func() {
	lt := c.lhsType(lhs)
	rt := c.rtype(lt)
	if c.hasCall(lhs) {
		c.fail(lhs, "call in an assignment's target")
	}
	var y val
	if rhs == nil {
		one := c.constant(s, constant.MakeInt64(1), rt)
		y = func() reflect.Value { return one }
	} else if op == token.SHL || op == token.SHR {
		y = c.intValue(rhs)
	} else {
		y = c.exprTo(rhs, lt)
	}
	rhsFirst := rhs != nil && c.hasCall(rhs)
	if rhsFirst && !c.settledAddr(lhs) {
		c.fail(s, "the target's operands would be read after the calls of the value")
	}
	k := rt.Kind()
	switch {
	case op == token.SHL || op == token.SHR:
		if !isInteger(k) {
			c.fail(s, "shift of %v", rt)
		}
	case k == reflect.String && op == token.ADD, isInteger(k):
	case isFloat(k) && op != token.REM:
		if fusesFMA() && (op == token.ADD || op == token.SUB) && rhs != nil && c.isMul(rhs) {
			c.fail(s, "x += y*z may be fused on this machine")
		}
	case isComplex(k) && op != token.REM:
	default:
		c.fail(s, "%s= on %v", op, rt)
	}
	compute := func(x, yv reflect.Value) reflect.Value {
		if op == token.SHL || op == token.SHR {
			return shift(op, x, yv, rt)
		}
		return binary(op, x, yv, rt)
	}
	p, pos := c.p, s.Pos()
	if as, ok := s.(*ast.AssignStmt); ok {
		pos = as.TokPos
	} else if id, ok := s.(*ast.IncDecStmt); ok {
		pos = id.TokPos
	}
	if ix, ok := ast.Unparen(lhs).(*ast.IndexExpr); ok {
		if mt, ok := c.info.Types[ix.X].Type.Underlying().(*types.Map); ok {
			m, key := c.expr(ix.X), c.exprTo(ix.Index, mt.Key())
			c.ordered(ix.X, ix.Index)
			zero := reflect.Zero(rt)
			ipos := ix.Lbrack
			return func() {
				mv, kv := m(), key()
				p.at(ipos)
				x := mv.MapIndex(kv)
				if !x.IsValid() {
					x = zero
				}
				yv := y()
				p.at(pos)
				r := compute(x, yv)
				p.at(ipos)
				setMapIndex(mv, kv, r)
			}
		}
	}
	dst := c.expr(lhs)
	if rhsFirst {
		return func() {
			yv := y()
			d := dst()
			p.at(pos)
			d.Set(compute(d, yv))
		}
	}
	return func() {
		d := dst()
		yv := y()
		p.at(pos)
		d.Set(compute(d, yv))
	}
}
