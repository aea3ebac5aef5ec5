package eval

import (
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
)

// Go evaluates the calls of an expression in order, but leaves unspecified
// when its other operands are evaluated relative to them; gc evaluates the
// calls first (x + f() reads x after f ran). The evaluator goes left to
// right, so it accepts only expressions where that cannot be seen: among
// the operands of one operation, those to the left of an operand with a
// call must be settled — constants, calls, or pure operations on those.

// ordered fails the compilation when an operand left of one with a call is
// not settled.
func (c *compiler) ordered(operands ...ast.Expr) {
	for j := len(operands) - 1; j > 0; j-- {
		if !c.hasCall(operands[j]) {
			continue
		}
		for _, o := range operands[:j] {
			if !c.settled(o) {
				c.fail(o, "evaluated before a call here, where compiled Go evaluates it after")
			}
		}
		return
	}
}

// hasCall reports whether evaluating e calls a function (append counts:
// gc orders it like a call).
func (c *compiler) hasCall(e ast.Node) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if found {
			return false
		}
		if x, ok := n.(ast.Expr); ok {
			if tv, ok := c.info.Types[x]; ok && tv.Value != nil {
				return false
			}
		}
		switch n := n.(type) {
		case *ast.CallExpr:
			if !c.info.Types[n.Fun].IsType() {
				if b := c.builtin(n); b == "" || b == "append" {
					found = true
				}
			}
		case *ast.FuncLit:
			return false
		}
		return !found
	})
	return found
}

// settled reports whether e, evaluated before a later call instead of
// after it, gives the same value and cannot panic: it reads no variable.
func (c *compiler) settled(e ast.Expr) bool {
	tv := c.info.Types[e]
	if tv.Value != nil || tv.IsNil() {
		return true
	}
	switch x := e.(type) {
	case *ast.ParenExpr:
		return c.settled(x.X)
	case *ast.CallExpr:
		if c.info.Types[x.Fun].IsType() {
			return len(x.Args) == 1 && c.settled(x.Args[0]) && c.pureConversion(x)
		}
		b := c.builtin(x)
		return b == "" || b == "append"
	case *ast.UnaryExpr:
		return x.Op != token.AND && x.Op != token.ARROW && c.settled(x.X)
	case *ast.BinaryExpr:
		switch x.Op {
		case token.QUO, token.REM:
			if v := c.info.Types[x.Y].Value; v == nil || !isInt(c.info.Types[x.Y].Type) {
				return false // may divide by zero
			}
		case token.SHL, token.SHR:
			if c.info.Types[x.Y].Value == nil && isSignedType(c.info.Types[x.Y].Type) {
				return false // may shift by a negative count
			}
		case token.EQL, token.NEQ, token.LSS, token.LEQ, token.GTR, token.GEQ:
			if types.IsInterface(c.info.Types[x.X].Type) || types.IsInterface(c.info.Types[x.Y].Type) {
				return false
			}
		}
		return c.settled(x.X) && c.settled(x.Y)
	}
	return false
}

// pureConversion reports a conversion that cannot panic.
func (c *compiler) pureConversion(call *ast.CallExpr) bool {
	to := c.info.Types[call].Type.Underlying()
	_, toSlicePtr := to.(*types.Pointer)
	_, toArray := to.(*types.Array)
	return !toSlicePtr && !toArray
}

// settledAddr reports whether the target lhs is at an address known
// without reading a variable: a variable, a field of one, an element of an
// array variable at a constant index.
func (c *compiler) settledAddr(lhs ast.Expr) bool {
	switch x := ast.Unparen(lhs).(type) {
	case *ast.Ident:
		return true
	case *ast.SelectorExpr:
		sel := c.info.Selections[x]
		if sel == nil {
			return true // a package's variable
		}
		if sel.Kind() != types.FieldVal || sel.Indirect() {
			return false
		}
		_, isPtr := c.info.Types[x.X].Type.Underlying().(*types.Pointer)
		return !isPtr && c.settledAddr(x.X)
	case *ast.IndexExpr:
		_, isArray := c.info.Types[x.X].Type.Underlying().(*types.Array)
		return isArray && c.info.Types[x.Index].Value != nil && c.settledAddr(x.X)
	}
	return false
}

func isInt(t types.Type) bool {
	b, ok := t.Underlying().(*types.Basic)
	return ok && b.Info()&types.IsInteger != 0
}

func isSignedType(t types.Type) bool {
	b, ok := t.Underlying().(*types.Basic)
	return ok && b.Info()&types.IsInteger != 0 && b.Info()&types.IsUnsigned == 0
}

// constantInt is an integer constant's value.
func constantInt(v constant.Value) (int, bool) {
	i, ok := constant.Int64Val(constant.ToInt(v))
	return int(i), ok && i >= 0 && int64(int(i)) == i
}
