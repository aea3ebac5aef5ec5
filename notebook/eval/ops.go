package eval

import (
	"go/token"
	"reflect"
)

// The operators run as Go's on the concrete types: generic functions
// instantiated for each kind, so wrap-around, rounding and the runtime's
// panics (integer division by zero, negative shift counts) are the
// compiler's own.

type signed interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64
}

type unsigned interface {
	~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr
}

type integer interface{ signed | unsigned }

type float interface{ ~float32 | ~float64 }

type cmplx interface{ ~complex64 | ~complex128 }

type ordered interface {
	integer | float | ~string
}

func intOp[T integer](op token.Token, x, y T) T {
	switch op {
	case token.ADD:
		return x + y
	case token.SUB:
		return x - y
	case token.MUL:
		return x * y
	case token.QUO:
		return x / y
	case token.REM:
		return x % y
	case token.AND:
		return x & y
	case token.OR:
		return x | y
	case token.XOR:
		return x ^ y
	case token.AND_NOT:
		return x &^ y
	}
	panic("eval: integer operator " + op.String())
}

func shiftOp[T integer](op token.Token, x T, s uint64) T {
	if op == token.SHL {
		return x << s
	}
	return x >> s
}

func floatOp[T float](op token.Token, x, y T) T {
	switch op {
	case token.ADD:
		return x + y
	case token.SUB:
		return x - y
	case token.MUL:
		return x * y
	case token.QUO:
		return x / y
	}
	panic("eval: float operator " + op.String())
}

func complexOp[T cmplx](op token.Token, x, y T) T {
	switch op {
	case token.ADD:
		return x + y
	case token.SUB:
		return x - y
	case token.MUL:
		return x * y
	case token.QUO:
		return x / y
	}
	panic("eval: complex operator " + op.String())
}

func compare[T ordered](op token.Token, x, y T) bool {
	switch op {
	case token.EQL:
		return x == y
	case token.NEQ:
		return x != y
	case token.LSS:
		return x < y
	case token.LEQ:
		return x <= y
	case token.GTR:
		return x > y
	case token.GEQ:
		return x >= y
	}
	panic("eval: comparison " + op.String())
}

func equal[T comparable](op token.Token, x, y T) bool {
	if op == token.EQL {
		return x == y
	}
	return x != y
}

// binary applies an arithmetic or bitwise operator to two values of the
// same basic kind; the result has type rt.
func binary(op token.Token, x, y reflect.Value, rt reflect.Type) reflect.Value {
	switch x.Kind() {
	case reflect.Int:
		return makeInt(rt, int64(intOp(op, int(x.Int()), int(y.Int()))))
	case reflect.Int8:
		return makeInt(rt, int64(intOp(op, int8(x.Int()), int8(y.Int()))))
	case reflect.Int16:
		return makeInt(rt, int64(intOp(op, int16(x.Int()), int16(y.Int()))))
	case reflect.Int32:
		return makeInt(rt, int64(intOp(op, int32(x.Int()), int32(y.Int()))))
	case reflect.Int64:
		return makeInt(rt, intOp(op, x.Int(), y.Int()))
	case reflect.Uint:
		return makeUint(rt, uint64(intOp(op, uint(x.Uint()), uint(y.Uint()))))
	case reflect.Uint8:
		return makeUint(rt, uint64(intOp(op, uint8(x.Uint()), uint8(y.Uint()))))
	case reflect.Uint16:
		return makeUint(rt, uint64(intOp(op, uint16(x.Uint()), uint16(y.Uint()))))
	case reflect.Uint32:
		return makeUint(rt, uint64(intOp(op, uint32(x.Uint()), uint32(y.Uint()))))
	case reflect.Uint64:
		return makeUint(rt, intOp(op, x.Uint(), y.Uint()))
	case reflect.Uintptr:
		return makeUint(rt, uint64(intOp(op, uintptr(x.Uint()), uintptr(y.Uint()))))
	case reflect.Float32:
		return makeFloat(rt, float64(floatOp(op, float32(x.Float()), float32(y.Float()))))
	case reflect.Float64:
		return makeFloat(rt, floatOp(op, x.Float(), y.Float()))
	case reflect.Complex64:
		return makeComplex(rt, complex128(complexOp(op, complex64(x.Complex()), complex64(y.Complex()))))
	case reflect.Complex128:
		return makeComplex(rt, complexOp(op, x.Complex(), y.Complex()))
	case reflect.String:
		return makeString(rt, x.String()+y.String())
	default:
	}
	panic("eval: operator " + op.String() + " on " + x.Kind().String())
}

// shift shifts x (an integer) by count; a negative signed count panics as
// Go's shift does.
func shift(op token.Token, x, count reflect.Value, rt reflect.Type) reflect.Value {
	var s uint64
	if isSigned(count.Kind()) {
		n := count.Int()
		if n < 0 {
			negativeShift(n)
		}
		s = uint64(n)
	} else {
		s = count.Uint()
	}
	switch x.Kind() {
	case reflect.Int:
		return makeInt(rt, int64(shiftOp(op, int(x.Int()), s)))
	case reflect.Int8:
		return makeInt(rt, int64(shiftOp(op, int8(x.Int()), s)))
	case reflect.Int16:
		return makeInt(rt, int64(shiftOp(op, int16(x.Int()), s)))
	case reflect.Int32:
		return makeInt(rt, int64(shiftOp(op, int32(x.Int()), s)))
	case reflect.Int64:
		return makeInt(rt, shiftOp(op, x.Int(), s))
	case reflect.Uint:
		return makeUint(rt, uint64(shiftOp(op, uint(x.Uint()), s)))
	case reflect.Uint8:
		return makeUint(rt, uint64(shiftOp(op, uint8(x.Uint()), s)))
	case reflect.Uint16:
		return makeUint(rt, uint64(shiftOp(op, uint16(x.Uint()), s)))
	case reflect.Uint32:
		return makeUint(rt, uint64(shiftOp(op, uint32(x.Uint()), s)))
	case reflect.Uint64:
		return makeUint(rt, shiftOp(op, x.Uint(), s))
	case reflect.Uintptr:
		return makeUint(rt, uint64(shiftOp(op, uintptr(x.Uint()), s)))
	default:
	}
	panic("eval: shift of " + x.Kind().String())
}

// comparison compares two values of the same basic kind.
func comparison(op token.Token, x, y reflect.Value) bool {
	switch x.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return compare(op, x.Int(), y.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return compare(op, x.Uint(), y.Uint())
	case reflect.Float32:
		return compare(op, float32(x.Float()), float32(y.Float()))
	case reflect.Float64:
		return compare(op, x.Float(), y.Float())
	case reflect.String:
		return compare(op, x.String(), y.String())
	case reflect.Complex64:
		return equal(op, complex64(x.Complex()), complex64(y.Complex()))
	case reflect.Complex128:
		return equal(op, x.Complex(), y.Complex())
	case reflect.Bool:
		return equal(op, x.Bool(), y.Bool())
	}
	panic("eval: comparison of " + x.Kind().String())
}

// unary applies -, + or ^ to a basic value.
func unary(op token.Token, x reflect.Value, rt reflect.Type) reflect.Value {
	switch {
	case op == token.ADD:
		return x
	case op == token.SUB && x.Kind() == reflect.Float32:
		return makeFloat(rt, float64(-float32(x.Float())))
	case op == token.SUB && x.Kind() == reflect.Float64:
		return makeFloat(rt, -x.Float())
	case op == token.SUB && x.Kind() == reflect.Complex64:
		return makeComplex(rt, complex128(-complex64(x.Complex())))
	case op == token.SUB && x.Kind() == reflect.Complex128:
		return makeComplex(rt, -x.Complex())
	case op == token.SUB:
		return binary(token.SUB, reflect.Zero(rt), x, rt) // integers: 0 - x wraps as -x does
	}
	// ^x is m ^ x with m all ones for unsigned x and -1 for signed x.
	if isSigned(x.Kind()) {
		return binary(token.XOR, makeInt(rt, -1), x, rt)
	}
	return binary(token.XOR, makeUint(rt, ^uint64(0)), x, rt)
}

// The values of results: made by converting a value of the basic type,
// which needs no pointer type (reflect.New(rt) would need *rt).

func retype(v reflect.Value, rt reflect.Type) reflect.Value {
	if v.Type() == rt {
		return v
	}
	return v.Convert(rt)
}

func makeInt(rt reflect.Type, x int64) reflect.Value { return retype(reflect.ValueOf(x), rt) }

func makeUint(rt reflect.Type, x uint64) reflect.Value { return retype(reflect.ValueOf(x), rt) }

func makeFloat(rt reflect.Type, x float64) reflect.Value { return retype(reflect.ValueOf(x), rt) }

func makeComplex(rt reflect.Type, x complex128) reflect.Value {
	return retype(reflect.ValueOf(x), rt)
}

func makeString(rt reflect.Type, x string) reflect.Value { return retype(reflect.ValueOf(x), rt) }

func makeBool(rt reflect.Type, x bool) reflect.Value { return retype(reflect.ValueOf(x), rt) }

func isSigned(k reflect.Kind) bool {
	return k >= reflect.Int && k <= reflect.Int64
}

func isUnsigned(k reflect.Kind) bool {
	return k >= reflect.Uint && k <= reflect.Uintptr
}

func isInteger(k reflect.Kind) bool { return isSigned(k) || isUnsigned(k) }

func isFloat(k reflect.Kind) bool { return k == reflect.Float32 || k == reflect.Float64 }

func isComplex(k reflect.Kind) bool { return k == reflect.Complex64 || k == reflect.Complex128 }

func isNumeric(k reflect.Kind) bool { return isInteger(k) || isFloat(k) || isComplex(k) }
