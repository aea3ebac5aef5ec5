package eval

import (
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"math"
	"reflect"

	"github.com/goaccel/goaccel/notebook/check"
)

// val computes an expression's value. The value has the run-time type of
// the expression's type (an untyped one's default type) and is never
// read-only; it may be the storage of a variable (addressable).
type val = func() reflect.Value

// expr compiles an expression used as a value.
func (c *compiler) expr(e ast.Expr) val {
	tv, ok := c.info.Types[e]
	if !ok {
		c.fail(e, "expression without type")
	}
	if tv.Value != nil {
		v := c.constant(e, tv.Value, c.rtype(tv.Type))
		return func() reflect.Value { return v }
	}
	if !tv.IsValue() || tv.IsNil() {
		c.fail(e, "not a value")
	}
	if isUntyped(tv.Type) && tv.Type.(*types.Basic).Kind() != types.UntypedBool {
		c.fail(e, "untyped expression")
	}
	switch e := e.(type) {
	case *ast.ParenExpr:
		return c.expr(e.X)
	case *ast.Ident:
		return c.ident(e)
	case *ast.SelectorExpr:
		return c.selector(e)
	case *ast.CallExpr:
		return c.callValue(e)
	case *ast.IndexExpr:
		return c.index(e)
	case *ast.StarExpr:
		return c.deref(e)
	case *ast.UnaryExpr:
		return c.unary(e)
	case *ast.BinaryExpr:
		return c.binary(e)
	case *ast.CompositeLit:
		return c.composite(e)
	}
	c.fail(e, "%s expressions are compiled", describe(e))
	return nil
}

// exprTo compiles an expression assigned to a variable of type to (Go's
// implicit conversions: to an interface, of untyped values, between
// assignable types).
func (c *compiler) exprTo(e ast.Expr, to types.Type) val {
	tv := c.info.Types[e]
	if tv.IsNil() {
		z := reflect.Zero(c.rtype(to))
		return func() reflect.Value { return z }
	}
	x := c.expr(e)
	conv := c.assignConv(e, tv.Type, to)
	if conv == nil {
		return x
	}
	return func() reflect.Value { return conv(x()) }
}

// assignConv returns the conversion of an assignment of a value of type
// from to a variable of type to (nil when none is needed).
func (c *compiler) assignConv(n ast.Node, from, to types.Type) func(reflect.Value) reflect.Value {
	rt := c.rtype(to)
	if types.Identical(from, to) {
		return nil
	}
	if types.IsInterface(to) {
		c.newable(rt)
		return func(x reflect.Value) reflect.Value { return toInterface(x, rt) }
	}
	if isUntyped(from) || types.AssignableTo(from, to) && c.rtype(from).ConvertibleTo(rt) {
		if c.rtype(from) == rt {
			return nil
		}
		return func(x reflect.Value) reflect.Value { return x.Convert(rt) }
	}
	c.fail(n, "assignment of %s to %s", from, to)
	return nil
}

// toInterface converts x to the interface type rt.
func toInterface(x reflect.Value, rt reflect.Type) reflect.Value {
	out := reflect.New(rt).Elem()
	if x.Kind() == reflect.Interface && x.IsNil() {
		return out
	}
	out.Set(x)
	return out
}

// constant is the value of a constant of run-time type rt; the constant
// must be representable (an untyped constant that overflows its default
// type is a compile error in compiled code).
func (c *compiler) constant(n ast.Node, v constant.Value, rt reflect.Type) reflect.Value {
	switch k := rt.Kind(); {
	case k == reflect.Bool && v.Kind() == constant.Bool:
		return makeBool(rt, constant.BoolVal(v))
	case k == reflect.String && v.Kind() == constant.String:
		return makeString(rt, constant.StringVal(v))
	case isSigned(k):
		i, exact := constant.Int64Val(constant.ToInt(v))
		if !exact || reflect.Zero(rt).OverflowInt(i) {
			c.fail(n, "constant %s overflows %v", v, rt)
		}
		return makeInt(rt, i)
	case isUnsigned(k):
		u, exact := constant.Uint64Val(constant.ToInt(v))
		if !exact || reflect.Zero(rt).OverflowUint(u) {
			c.fail(n, "constant %s overflows %v", v, rt)
		}
		return makeUint(rt, u)
	case isFloat(k):
		return makeFloat(rt, c.floatConst(n, constant.ToFloat(v), k == reflect.Float32))
	case isComplex(k):
		z := constant.ToComplex(v)
		small := k == reflect.Complex64
		return makeComplex(rt, complex(c.floatConst(n, constant.Real(z), small), c.floatConst(n, constant.Imag(z), small)))
	}
	c.fail(n, "constant %s of type %v", v, rt)
	return reflect.Value{}
}

func (c *compiler) floatConst(n ast.Node, v constant.Value, small bool) float64 {
	if v.Kind() != constant.Float && v.Kind() != constant.Int {
		c.fail(n, "constant %s is not a number", v)
	}
	var f float64
	if small {
		f32, _ := constant.Float32Val(v)
		f = float64(f32)
	} else {
		f, _ = constant.Float64Val(v)
	}
	if math.IsInf(f, 0) {
		c.fail(n, "constant %s overflows", v)
	}
	return f
}

// ident compiles a variable.
func (c *compiler) ident(id *ast.Ident) val {
	if v, ok := c.info.Uses[id].(*types.Var); ok {
		return c.varRef(id, v)
	}
	c.fail(id, "%s is not a variable", id.Name)
	return nil
}

// varRef compiles a reference to a variable: one the cell defines, a
// session variable, or a variable of a linked package.
func (c *compiler) varRef(n ast.Node, o *types.Var) val {
	if v, ok := c.hoisted[o]; ok {
		return func() reflect.Value { return v }
	}
	if e := c.cell.EntryOf(o); e != nil {
		if e.Kind != check.VarEntry {
			c.fail(n, "%s is not a variable", o.Name())
		}
		v, ok := c.env.Var(e)
		if !ok || !v.CanAddr() || v.Type() != c.rtype(o.Type()) {
			c.fail(n, "variable %s has no storage of its type", o.Name())
		}
		return func() reflect.Value { return v }
	}
	if o.Pkg() != nil && o.Pkg() != c.cell.Pkg && !o.IsField() {
		return c.pkgVar(n, o)
	}
	c.fail(n, "local variable %s", o.Name())
	return nil
}

// pkgVar compiles a variable of a linked package.
func (c *compiler) pkgVar(n ast.Node, o *types.Var) val {
	v, ok := c.env.Package(o.Pkg().Path())[o.Name()]
	if !ok || !v.CanAddr() || v.Type() != c.rtype(o.Type()) {
		c.fail(n, "%s.%s is not linked into the kernel", o.Pkg().Path(), o.Name())
	}
	return func() reflect.Value { return v }
}

// selector compiles a field selection or a package's variable.
func (c *compiler) selector(e *ast.SelectorExpr) val {
	if sel := c.info.Selections[e]; sel != nil {
		if sel.Kind() != types.FieldVal {
			c.fail(e, "method values are compiled")
		}
		v, _ := c.walk(c.expr(e.X), c.info.Types[e.X].Type, sel.Index(), e.Sel.Pos())
		return v
	}
	if v, ok := c.info.Uses[e.Sel].(*types.Var); ok {
		return c.pkgVar(e, v)
	}
	c.fail(e, "%s is not a variable", e.Sel.Name)
	return nil
}

// walk compiles the selection of the (embedded) fields path from a value
// of type t, with the pointer indirections it implies; it returns the
// selected value and its type.
func (c *compiler) walk(x val, t types.Type, path []int, pos token.Pos) (val, types.Type) {
	type step struct {
		deref bool
		field int
	}
	var steps []step
	for _, i := range path {
		if p, ok := t.Underlying().(*types.Pointer); ok {
			steps = append(steps, step{deref: true})
			t = p.Elem()
		}
		st, ok := t.Underlying().(*types.Struct)
		if !ok {
			c.fail(nil, "selection in %s", t)
		}
		rt := c.rtype(t)
		f := st.Field(i)
		if rt.Kind() != reflect.Struct || rt.NumField() != st.NumFields() || rt.Field(i).Name != f.Name() {
			c.fail(nil, "struct %s does not match its run-time type %v", t, rt)
		}
		c.newable(rt) // a copy of an unaddressable struct
		if !f.Exported() {
			c.newable(rt.Field(i).Type) // unRO
		}
		steps = append(steps, step{field: i})
		t = f.Type()
	}
	if len(steps) == 0 {
		return x, t
	}
	p := c.p
	return func() reflect.Value {
		v := x()
		for _, s := range steps {
			if s.deref {
				if v.IsNil() {
					p.at(pos)
					nilPointer()
				}
				v = v.Elem()
				continue
			}
			if !v.CanAddr() {
				tmp := reflect.New(v.Type()).Elem()
				tmp.Set(v)
				v = tmp
			}
			v = unRO(v.Field(s.field))
		}
		return v
	}, t
}

// index compiles an index expression on a map, slice, array or string.
func (c *compiler) index(e *ast.IndexExpr) val {
	xt := c.info.Types[e.X].Type
	c.ordered(e.X, e.Index)
	p := c.p
	pos := e.Lbrack
	switch u := xt.Underlying().(type) {
	case *types.Map:
		m, key := c.expr(e.X), c.exprTo(e.Index, u.Key())
		zero := reflect.Zero(c.rtype(u.Elem()))
		return func() reflect.Value {
			mv, k := m(), key()
			p.at(pos)
			if v := mv.MapIndex(k); v.IsValid() {
				return v
			}
			return zero
		}
	case *types.Slice, *types.Array:
	case *types.Basic:
		if u.Info()&types.IsString == 0 {
			c.fail(e, "index of %s", xt)
		}
	default:
		c.fail(e, "index of %s", xt)
	}
	x, i := c.expr(e.X), c.intValue(e.Index)
	return func() reflect.Value {
		v := x()
		n := i()
		p.at(pos)
		return v.Index(bound(n, v.Len()))
	}
}

// intValue compiles an integer operand used as an index or length.
func (c *compiler) intValue(e ast.Expr) val {
	t := c.info.Types[e].Type
	if b, ok := t.Underlying().(*types.Basic); !ok || b.Info()&types.IsInteger == 0 {
		c.fail(e, "index of type %s", t)
	}
	return c.expr(e)
}

// bound checks an index against a length as Go's bounds check does.
func bound(i reflect.Value, n int) int {
	if isSigned(i.Kind()) {
		x := i.Int()
		checkIndex(x, n)
		return int(x)
	}
	u := i.Uint()
	checkIndexUnsigned(u, n)
	return int(u)
}

// deref compiles *p.
func (c *compiler) deref(e *ast.StarExpr) val {
	x := c.expr(e.X)
	p, pos := c.p, e.Star
	return func() reflect.Value {
		v := x()
		if v.IsNil() {
			p.at(pos)
			nilPointer()
		}
		return v.Elem()
	}
}

// unary compiles a unary operation.
func (c *compiler) unary(e *ast.UnaryExpr) val {
	rt := c.rtype(c.info.Types[e].Type)
	switch e.Op {
	case token.AND:
		if lit, ok := ast.Unparen(e.X).(*ast.CompositeLit); ok {
			x := c.composite(lit)
			return func() reflect.Value { return x().Addr() }
		}
		c.newable(c.rtype(c.info.Types[e.X].Type))
		x := c.expr(e.X)
		return func() reflect.Value { return x().Addr() }
	case token.NOT:
		x := c.expr(e.X)
		return func() reflect.Value { return makeBool(rt, !x().Bool()) }
	case token.ADD, token.SUB, token.XOR:
		if !isNumeric(rt.Kind()) || e.Op == token.XOR && !isInteger(rt.Kind()) {
			c.fail(e, "%s on %v", e.Op, rt)
		}
		x := c.expr(e.X)
		op := e.Op
		return func() reflect.Value { return unary(op, x(), rt) }
	}
	c.fail(e, "operator %s is compiled", e.Op)
	return nil
}

// binary compiles a binary operation.
func (c *compiler) binary(e *ast.BinaryExpr) val {
	rt := c.rtype(c.info.Types[e].Type)
	xt, yt := c.info.Types[e.X], c.info.Types[e.Y]
	op, p, pos := e.Op, c.p, e.OpPos
	switch op {
	case token.LAND, token.LOR:
		x, y := c.expr(e.X), c.expr(e.Y)
		return func() reflect.Value {
			r := x().Bool()
			if r == (op == token.LAND) {
				r = y().Bool()
			}
			return makeBool(rt, r)
		}
	case token.EQL, token.NEQ, token.LSS, token.LEQ, token.GTR, token.GEQ:
		return c.comparison(e, rt)
	}
	c.ordered(e.X, e.Y)
	if op == token.SHL || op == token.SHR {
		if !isInteger(rt.Kind()) || !types.Identical(xt.Type, c.info.Types[e].Type) {
			c.fail(e, "shift of %s", xt.Type)
		}
		x, y := c.expr(e.X), c.intValue(e.Y)
		return func() reflect.Value {
			xv, yv := x(), y()
			p.at(pos)
			return shift(op, xv, yv, rt)
		}
	}
	if !types.Identical(xt.Type, yt.Type) || !types.Identical(xt.Type, c.info.Types[e].Type) {
		c.fail(e, "operands of types %s and %s", xt.Type, yt.Type)
	}
	k := rt.Kind()
	switch {
	case k == reflect.String && op == token.ADD:
	case isInteger(k):
	case isFloat(k) && op != token.REM:
		if fusesFMA() && (op == token.ADD || op == token.SUB) && (c.isMul(e.X) || c.isMul(e.Y)) {
			c.fail(e, "x*y ± z may be fused on this machine")
		}
	case isComplex(k) && op != token.REM:
	default:
		c.fail(e, "operator %s on %v", op, rt)
	}
	switch op {
	case token.ADD, token.SUB, token.MUL, token.QUO, token.REM, token.AND, token.OR, token.XOR, token.AND_NOT:
	default:
		c.fail(e, "operator %s", op)
	}
	x, y := c.expr(e.X), c.expr(e.Y)
	return func() reflect.Value {
		xv, yv := x(), y()
		p.at(pos)
		return binary(op, xv, yv, rt)
	}
}

// isMul reports a floating-point multiplication computed at run time.
func (c *compiler) isMul(e ast.Expr) bool {
	b, ok := ast.Unparen(e).(*ast.BinaryExpr)
	return ok && b.Op == token.MUL && c.info.Types[b].Value == nil
}

// comparison compiles a comparison of basic values, or of a value with
// nil.
func (c *compiler) comparison(e *ast.BinaryExpr, rt reflect.Type) val {
	xt, yt := c.info.Types[e.X], c.info.Types[e.Y]
	op := e.Op
	if xt.IsNil() || yt.IsNil() {
		other := e.X
		if xt.IsNil() {
			other = e.Y
		}
		switch c.rtype(c.info.Types[other].Type).Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Func, reflect.Chan, reflect.Interface, reflect.UnsafePointer:
		default:
			c.fail(e, "comparison with nil")
		}
		x := c.expr(other)
		return func() reflect.Value { return makeBool(rt, x().IsNil() == (op == token.EQL)) }
	}
	c.ordered(e.X, e.Y)
	if !types.Identical(xt.Type, yt.Type) {
		c.fail(e, "comparison of %s and %s", xt.Type, yt.Type)
	}
	k := c.rtype(xt.Type).Kind()
	if !isNumeric(k) && k != reflect.String && k != reflect.Bool {
		c.fail(e, "comparison of %s", xt.Type)
	}
	x, y := c.expr(e.X), c.expr(e.Y)
	return func() reflect.Value { return makeBool(rt, comparison(op, x(), y())) }
}
