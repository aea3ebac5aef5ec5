package dap

import (
	"errors"
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"math"
	"reflect"
	"strconv"
)

// This file evaluates the expressions the debugger's evaluate request and
// the panel's watches send, over the values of a stopped frame or of the
// session. It reads values; it never runs code: variables, literals, fields,
// indexes, slices, dereferences, unary and binary operators, comparisons,
// len, cap and conversions between basic types. A call of a function is
// refused (running notebook code on the debugger's goroutine while a cell is
// stopped could stop at a breakpoint itself).

// errCall is the refusal of a function call.
var errCall = errors.New("the debugger evaluates variables, fields, indexes, operators, len, cap and conversions; it does not call functions (run the call in a cell instead)")

// lookupFunc finds a variable by name.
type lookupFunc func(name string) (reflect.Value, bool)

// operand is a value being evaluated; untyped is set for constants written
// in the expression, which take the type of the other operand.
type operand struct {
	v       reflect.Value
	untyped bool
}

// evaluate evaluates expr with names resolved by lookup.
func evaluate(expr string, lookup lookupFunc) (v reflect.Value, err error) {
	x, err := parser.ParseExpr(expr)
	if err != nil {
		return reflect.Value{}, fmt.Errorf("%s: %w", expr, err)
	}
	defer func() {
		if r := recover(); r != nil {
			v, err = reflect.Value{}, fmt.Errorf("%s: %v", expr, r)
		}
	}()
	o, err := (&evaluator{lookup: lookup}).eval(x)
	if err != nil {
		return reflect.Value{}, err
	}
	return o.v, nil
}

type evaluator struct {
	lookup lookupFunc
}

var basicTypes = map[string]reflect.Type{
	"bool": reflect.TypeFor[bool](), "string": reflect.TypeFor[string](),
	"int": reflect.TypeFor[int](), "int8": reflect.TypeFor[int8](), "int16": reflect.TypeFor[int16](),
	"int32": reflect.TypeFor[int32](), "int64": reflect.TypeFor[int64](), "rune": reflect.TypeFor[rune](),
	"uint": reflect.TypeFor[uint](), "uint8": reflect.TypeFor[uint8](), "uint16": reflect.TypeFor[uint16](),
	"uint32": reflect.TypeFor[uint32](), "uint64": reflect.TypeFor[uint64](), "byte": reflect.TypeFor[byte](),
	"uintptr": reflect.TypeFor[uintptr](), "float32": reflect.TypeFor[float32](), "float64": reflect.TypeFor[float64](),
	"complex64": reflect.TypeFor[complex64](), "complex128": reflect.TypeFor[complex128](),
}

func (ev *evaluator) eval(x ast.Expr) (operand, error) {
	switch x := x.(type) {
	case *ast.ParenExpr:
		return ev.eval(x.X)
	case *ast.Ident:
		if v, ok := ev.lookup(x.Name); ok {
			return operand{v: v}, nil
		}
		switch x.Name {
		case "true", "false":
			return operand{v: reflect.ValueOf(x.Name == "true"), untyped: true}, nil
		case "nil":
			return operand{untyped: true}, nil
		}
		return operand{}, fmt.Errorf("undefined: %s", x.Name)
	case *ast.BasicLit:
		return basicLit(x)
	case *ast.SelectorExpr:
		o, err := ev.eval(x.X)
		if err != nil {
			return operand{}, err
		}
		v := o.v
		for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) {
			if v.IsNil() {
				return operand{}, fmt.Errorf("%s is nil", exprText(x.X))
			}
			v = v.Elem()
		}
		if !v.IsValid() || v.Kind() != reflect.Struct {
			return operand{}, fmt.Errorf("%s has no field %s", exprText(x.X), x.Sel.Name)
		}
		f, ok := fieldByName(v, x.Sel.Name)
		if !ok {
			return operand{}, fmt.Errorf("%s has no field %s", exprText(x.X), x.Sel.Name)
		}
		return operand{v: f}, nil
	case *ast.StarExpr:
		o, err := ev.eval(x.X)
		if err != nil {
			return operand{}, err
		}
		if o.v.Kind() != reflect.Pointer {
			return operand{}, fmt.Errorf("cannot indirect %s", exprText(x.X))
		}
		if o.v.IsNil() {
			return operand{}, fmt.Errorf("%s is nil", exprText(x.X))
		}
		return operand{v: o.v.Elem()}, nil
	case *ast.IndexExpr:
		return ev.index(x)
	case *ast.SliceExpr:
		return ev.slice(x)
	case *ast.UnaryExpr:
		return ev.unary(x)
	case *ast.BinaryExpr:
		return ev.binary(x)
	case *ast.CallExpr:
		return ev.call(x)
	}
	return operand{}, fmt.Errorf("%s: not supported by the debugger's evaluator", exprText(x))
}

func basicLit(x *ast.BasicLit) (operand, error) {
	c := constant.MakeFromLiteral(x.Value, x.Kind, 0)
	switch c.Kind() {
	case constant.Int:
		if n, ok := constant.Int64Val(c); ok {
			if x.Kind == token.CHAR {
				return operand{v: reflect.ValueOf(rune(n)), untyped: true}, nil
			}
			return operand{v: reflect.ValueOf(int(n)), untyped: true}, nil
		}
		return operand{}, fmt.Errorf("%s overflows int", x.Value)
	case constant.Float:
		f, _ := constant.Float64Val(c)
		return operand{v: reflect.ValueOf(f), untyped: true}, nil
	case constant.String:
		return operand{v: reflect.ValueOf(constant.StringVal(c)), untyped: true}, nil
	case constant.Complex:
		re, _ := constant.Float64Val(constant.Real(c))
		im, _ := constant.Float64Val(constant.Imag(c))
		return operand{v: reflect.ValueOf(complex(re, im)), untyped: true}, nil
	}
	return operand{}, fmt.Errorf("bad literal %s", x.Value)
}

func (ev *evaluator) index(x *ast.IndexExpr) (operand, error) {
	o, err := ev.eval(x.X)
	if err != nil {
		return operand{}, err
	}
	i, err := ev.eval(x.Index)
	if err != nil {
		return operand{}, err
	}
	v := o.v
	if v.Kind() == reflect.Pointer && !v.IsNil() && v.Elem().Kind() == reflect.Array {
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Map:
		k, err := convertTo(i, v.Type().Key())
		if err != nil {
			return operand{}, err
		}
		e := v.MapIndex(k)
		if !e.IsValid() {
			e = reflect.Zero(v.Type().Elem())
		}
		return operand{v: e}, nil
	case reflect.Slice, reflect.Array, reflect.String:
		n, err := intOf(i)
		if err != nil {
			return operand{}, err
		}
		if n < 0 || n >= v.Len() {
			return operand{}, fmt.Errorf("index %d out of range [0:%d]", n, v.Len())
		}
		return operand{v: v.Index(n)}, nil
	}
	return operand{}, fmt.Errorf("cannot index %s", exprText(x.X))
}

func (ev *evaluator) slice(x *ast.SliceExpr) (operand, error) {
	o, err := ev.eval(x.X)
	if err != nil {
		return operand{}, err
	}
	v := o.v
	if v.Kind() == reflect.Pointer && !v.IsNil() && v.Elem().Kind() == reflect.Array {
		v = v.Elem()
	}
	if v.Kind() != reflect.Slice && v.Kind() != reflect.String && !(v.Kind() == reflect.Array && v.CanAddr()) {
		return operand{}, fmt.Errorf("cannot slice %s", exprText(x.X))
	}
	lo, hi := 0, v.Len()
	if x.Low != nil {
		l, err := ev.eval(x.Low)
		if err != nil {
			return operand{}, err
		}
		if lo, err = intOf(l); err != nil {
			return operand{}, err
		}
	}
	if x.High != nil {
		h, err := ev.eval(x.High)
		if err != nil {
			return operand{}, err
		}
		if hi, err = intOf(h); err != nil {
			return operand{}, err
		}
	}
	limit := v.Len()
	if v.Kind() != reflect.String {
		limit = v.Cap()
	}
	if lo < 0 || hi < lo || hi > limit || x.Max != nil {
		return operand{}, fmt.Errorf("slice bounds out of range [%d:%d] (or a 3-index slice)", lo, hi)
	}
	return operand{v: v.Slice(lo, hi)}, nil
}

func (ev *evaluator) unary(x *ast.UnaryExpr) (operand, error) {
	o, err := ev.eval(x.X)
	if err != nil {
		return operand{}, err
	}
	v := o.v
	if !v.IsValid() {
		return operand{}, fmt.Errorf("invalid operation: %s nil", x.Op)
	}
	out := reflect.New(v.Type()).Elem()
	switch {
	case x.Op == token.ADD && (isInt(v) || isUint(v) || isFloat(v) || isComplex(v)):
		out.Set(v)
	case x.Op == token.SUB && isInt(v):
		out.SetInt(-v.Int())
	case x.Op == token.SUB && isFloat(v):
		out.SetFloat(-v.Float())
	case x.Op == token.SUB && isComplex(v):
		out.SetComplex(-v.Complex())
	case x.Op == token.NOT && v.Kind() == reflect.Bool:
		out.SetBool(!v.Bool())
	case x.Op == token.XOR && isInt(v):
		out.SetInt(^v.Int())
	case x.Op == token.XOR && isUint(v):
		out.SetUint(^v.Uint())
	default:
		return operand{}, fmt.Errorf("invalid operation: %s on %s", x.Op, v.Type())
	}
	return operand{v: out, untyped: o.untyped}, nil
}

func (ev *evaluator) binary(x *ast.BinaryExpr) (operand, error) {
	a, err := ev.eval(x.X)
	if err != nil {
		return operand{}, err
	}
	if x.Op == token.LAND || x.Op == token.LOR {
		if a.v.Kind() != reflect.Bool {
			return operand{}, fmt.Errorf("invalid operation: %s on %s", x.Op, exprText(x.X))
		}
		if a.v.Bool() == (x.Op == token.LOR) {
			return operand{v: reflect.ValueOf(a.v.Bool())}, nil
		}
	}
	b, err := ev.eval(x.Y)
	if err != nil {
		return operand{}, err
	}
	if x.Op == token.SHL || x.Op == token.SHR {
		return shift(x.Op, a, b)
	}
	a, b, err = unify(a, b)
	if err != nil {
		return operand{}, err
	}
	untyped := a.untyped && b.untyped
	switch x.Op {
	case token.EQL, token.NEQ:
		eq, err := equal(a.v, b.v)
		if err != nil {
			return operand{}, err
		}
		return operand{v: reflect.ValueOf(eq == (x.Op == token.EQL)), untyped: untyped}, nil
	case token.LSS, token.LEQ, token.GTR, token.GEQ:
		c, err := compare(a.v, b.v)
		if err != nil {
			return operand{}, err
		}
		r := map[token.Token]bool{token.LSS: c < 0, token.LEQ: c <= 0, token.GTR: c > 0, token.GEQ: c >= 0}[x.Op]
		return operand{v: reflect.ValueOf(r), untyped: untyped}, nil
	case token.LAND, token.LOR:
		if b.v.Kind() != reflect.Bool {
			return operand{}, fmt.Errorf("invalid operation: %s on %s", x.Op, exprText(x.Y))
		}
		return operand{v: reflect.ValueOf(b.v.Bool())}, nil
	}
	v, err := arith(x.Op, a.v, b.v)
	return operand{v: v, untyped: untyped}, err
}

// unify gives an untyped operand the type of the other one.
func unify(a, b operand) (operand, operand, error) {
	switch {
	case a.untyped && !b.untyped && b.v.IsValid():
		v, err := convertTo(a, b.v.Type())
		return operand{v: v}, b, err
	case b.untyped && !a.untyped && a.v.IsValid():
		v, err := convertTo(b, a.v.Type())
		return a, operand{v: v}, err
	case a.untyped && b.untyped && a.v.IsValid() && b.v.IsValid() && a.v.Type() != b.v.Type():
		// int and float constants: float; rune and int: rune.
		t := reflect.TypeFor[rune]()
		if isFloat(a.v) || isFloat(b.v) {
			t = reflect.TypeFor[float64]()
		}
		x, errA := convertTo(a, t)
		y, errB := convertTo(b, t)
		if errA == nil && errB == nil {
			return operand{v: x, untyped: true}, operand{v: y, untyped: true}, nil
		}
	}
	if a.v.IsValid() && b.v.IsValid() && a.v.Type() != b.v.Type() {
		return a, b, fmt.Errorf("mismatched types %s and %s", a.v.Type(), b.v.Type())
	}
	return a, b, nil
}

// convertTo converts o to t when Go would (an untyped constant of the right
// kind, or a value of a type convertible without surprise).
func convertTo(o operand, t reflect.Type) (reflect.Value, error) {
	if !o.v.IsValid() {
		switch t.Kind() {
		case reflect.Pointer, reflect.Interface, reflect.Slice, reflect.Map, reflect.Chan, reflect.Func:
			return reflect.Zero(t), nil
		}
		return reflect.Value{}, fmt.Errorf("cannot use nil as %s", t)
	}
	v := o.v
	if v.Type() == t {
		return v, nil
	}
	if v.Type().AssignableTo(t) {
		out := reflect.New(t).Elem()
		out.Set(v)
		return out, nil
	}
	numeric := func(x reflect.Value) bool { return isInt(x) || isUint(x) || isFloat(x) }
	ok := (numeric(v) && (t.Kind() >= reflect.Int && t.Kind() <= reflect.Float64)) ||
		(v.Kind() == reflect.String && t.Kind() == reflect.String) ||
		(v.Kind() == reflect.Bool && t.Kind() == reflect.Bool) ||
		(isComplex(v) && (t.Kind() == reflect.Complex64 || t.Kind() == reflect.Complex128))
	if !ok || !v.Type().ConvertibleTo(t) {
		return reflect.Value{}, fmt.Errorf("cannot use %s value as %s", v.Type(), t)
	}
	if o.untyped && isFloat(v) && t.Kind() <= reflect.Uintptr && v.Float() != math.Trunc(v.Float()) {
		return reflect.Value{}, fmt.Errorf("%v truncated to %s", v.Float(), t)
	}
	return v.Convert(t), nil
}

func shift(op token.Token, a, b operand) (operand, error) {
	n, err := intOf(b)
	if err != nil || n < 0 {
		return operand{}, fmt.Errorf("invalid shift count")
	}
	v := a.v
	out := reflect.New(v.Type()).Elem()
	switch {
	case isInt(v) && op == token.SHL:
		out.SetInt(v.Int() << n)
	case isInt(v):
		out.SetInt(v.Int() >> n)
	case isUint(v) && op == token.SHL:
		out.SetUint(v.Uint() << n)
	case isUint(v):
		out.SetUint(v.Uint() >> n)
	default:
		return operand{}, fmt.Errorf("invalid shift of %s", v.Type())
	}
	return operand{v: out, untyped: a.untyped}, nil
}

func arith(op token.Token, a, b reflect.Value) (reflect.Value, error) {
	if !a.IsValid() || !b.IsValid() {
		return reflect.Value{}, fmt.Errorf("invalid operation: %s on nil", op)
	}
	out := reflect.New(a.Type()).Elem()
	var err error
	switch {
	case isInt(a):
		var r int64
		r, err = integerOp(op, a.Int(), b.Int())
		out.SetInt(r)
	case isUint(a):
		var r uint64
		r, err = integerOp(op, a.Uint(), b.Uint())
		out.SetUint(r)
	case isFloat(a):
		var r float64
		r, err = fieldOp(op, a.Float(), b.Float())
		out.SetFloat(r)
	case isComplex(a):
		var r complex128
		r, err = fieldOp(op, a.Complex(), b.Complex())
		out.SetComplex(r)
	case a.Kind() == reflect.String && op == token.ADD:
		out.SetString(a.String() + b.String())
	default:
		err = errBadOp
	}
	if errors.Is(err, errBadOp) {
		return reflect.Value{}, fmt.Errorf("invalid operation: %s on %s", op, a.Type())
	}
	return out, err
}

var errBadOp = errors.New("invalid operation")

// integerOp applies an arithmetic or bitwise operator, wrapping as Go does.
func integerOp[T int64 | uint64](op token.Token, x, y T) (T, error) {
	if (op == token.QUO || op == token.REM) && y == 0 {
		return 0, errors.New("integer divide by zero")
	}
	switch op {
	case token.ADD:
		return x + y, nil
	case token.SUB:
		return x - y, nil
	case token.MUL:
		return x * y, nil
	case token.QUO:
		return x / y, nil
	case token.REM:
		return x % y, nil
	case token.AND:
		return x & y, nil
	case token.OR:
		return x | y, nil
	case token.XOR:
		return x ^ y, nil
	case token.AND_NOT:
		return x &^ y, nil
	}
	return 0, errBadOp
}

// fieldOp applies + - * / to floating-point or complex numbers.
func fieldOp[T float64 | complex128](op token.Token, x, y T) (T, error) {
	switch op {
	case token.ADD:
		return x + y, nil
	case token.SUB:
		return x - y, nil
	case token.MUL:
		return x * y, nil
	case token.QUO:
		return x / y, nil
	}
	return 0, errBadOp
}

func equal(a, b reflect.Value) (bool, error) {
	switch {
	case !a.IsValid() && !b.IsValid():
		return true, nil
	case !a.IsValid():
		return isNilable(b) && b.IsNil(), nil
	case !b.IsValid():
		return isNilable(a) && a.IsNil(), nil
	}
	if !a.Type().Comparable() {
		return false, fmt.Errorf("%s cannot be compared", a.Type())
	}
	return a.Equal(b), nil
}

func isNilable(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Slice, reflect.Map, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return true
	}
	return false
}

func compare(a, b reflect.Value) (int, error) {
	switch {
	case isInt(a):
		return cmp3(a.Int() < b.Int(), a.Int() > b.Int()), nil
	case isUint(a):
		return cmp3(a.Uint() < b.Uint(), a.Uint() > b.Uint()), nil
	case isFloat(a):
		return cmp3(a.Float() < b.Float(), a.Float() > b.Float()), nil
	case a.Kind() == reflect.String:
		return cmp3(a.String() < b.String(), a.String() > b.String()), nil
	}
	return 0, fmt.Errorf("%s is not ordered", a.Type())
}

func cmp3(less, greater bool) int {
	switch {
	case less:
		return -1
	case greater:
		return 1
	}
	return 0
}

func (ev *evaluator) call(x *ast.CallExpr) (operand, error) {
	id, ok := x.Fun.(*ast.Ident)
	if !ok || len(x.Args) != 1 || x.Ellipsis.IsValid() {
		return operand{}, errCall
	}
	if _, shadowed := ev.lookup(id.Name); shadowed {
		return operand{}, errCall
	}
	arg, err := ev.eval(x.Args[0])
	if err != nil {
		return operand{}, err
	}
	switch id.Name {
	case "len", "cap":
		v := arg.v
		if v.Kind() == reflect.Pointer && !v.IsNil() && v.Elem().Kind() == reflect.Array {
			v = v.Elem()
		}
		switch v.Kind() {
		case reflect.Slice, reflect.Array, reflect.Chan:
		case reflect.String, reflect.Map:
			if id.Name == "cap" {
				return operand{}, fmt.Errorf("invalid argument for cap: %s", v.Type())
			}
		default:
			return operand{}, fmt.Errorf("invalid argument for %s: %s", id.Name, exprText(x.Args[0]))
		}
		if id.Name == "len" {
			return operand{v: reflect.ValueOf(v.Len())}, nil
		}
		return operand{v: reflect.ValueOf(v.Cap())}, nil
	}
	t, ok := basicTypes[id.Name]
	if !ok {
		return operand{}, errCall
	}
	if t.Kind() == reflect.String && (isInt(arg.v) || isUint(arg.v)) {
		return operand{v: reflect.ValueOf(string(rune(toFloat(arg.v))))}, nil
	}
	if arg.untyped {
		v, err := convertTo(arg, t)
		return operand{v: v}, err
	}
	if !arg.v.IsValid() || !arg.v.Type().ConvertibleTo(t) {
		return operand{}, fmt.Errorf("cannot convert %s to %s", exprText(x.Args[0]), t)
	}
	return operand{v: arg.v.Convert(t)}, nil
}

func intOf(o operand) (int, error) {
	switch {
	case isInt(o.v):
		return int(o.v.Int()), nil
	case isUint(o.v):
		return int(o.v.Uint()), nil
	case o.untyped && isFloat(o.v) && o.v.Float() == math.Trunc(o.v.Float()):
		return int(o.v.Float()), nil
	}
	return 0, errors.New("index or count must be an integer")
}

func isInt(v reflect.Value) bool {
	return v.IsValid() && v.Kind() >= reflect.Int && v.Kind() <= reflect.Int64
}

func isUint(v reflect.Value) bool {
	return v.IsValid() && v.Kind() >= reflect.Uint && v.Kind() <= reflect.Uintptr
}

func isFloat(v reflect.Value) bool {
	return v.IsValid() && (v.Kind() == reflect.Float32 || v.Kind() == reflect.Float64)
}

func isComplex(v reflect.Value) bool {
	return v.IsValid() && (v.Kind() == reflect.Complex64 || v.Kind() == reflect.Complex128)
}

// exprText is x as written (for messages).
func exprText(x ast.Expr) string {
	switch x := x.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return exprText(x.X) + "." + x.Sel.Name
	case *ast.BasicLit:
		return x.Value
	case *ast.IndexExpr:
		return exprText(x.X) + "[" + exprText(x.Index) + "]"
	case *ast.StarExpr:
		return "*" + exprText(x.X)
	case *ast.ParenExpr:
		return "(" + exprText(x.X) + ")"
	case *ast.CallExpr:
		return exprText(x.Fun) + "(…)"
	}
	return strconv.Quote(fmt.Sprintf("%T", x))
}
