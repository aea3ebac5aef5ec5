package eval

import (
	"reflect"
)

// convertNumeric converts a number to the numeric type rt as Go's
// conversion does (the conversions are the compiler's, on the concrete
// types).
func convertNumeric(x reflect.Value, rt reflect.Type) reflect.Value {
	switch rt.Kind() {
	case reflect.Int:
		return makeInt(rt, int64(to[int](x)))
	case reflect.Int8:
		return makeInt(rt, int64(to[int8](x)))
	case reflect.Int16:
		return makeInt(rt, int64(to[int16](x)))
	case reflect.Int32:
		return makeInt(rt, int64(to[int32](x)))
	case reflect.Int64:
		return makeInt(rt, to[int64](x))
	case reflect.Uint:
		return makeUint(rt, uint64(to[uint](x)))
	case reflect.Uint8:
		return makeUint(rt, uint64(to[uint8](x)))
	case reflect.Uint16:
		return makeUint(rt, uint64(to[uint16](x)))
	case reflect.Uint32:
		return makeUint(rt, uint64(to[uint32](x)))
	case reflect.Uint64:
		return makeUint(rt, to[uint64](x))
	case reflect.Uintptr:
		return makeUint(rt, uint64(to[uintptr](x)))
	case reflect.Float32:
		return makeFloat(rt, float64(to[float32](x)))
	case reflect.Float64:
		return makeFloat(rt, to[float64](x))
	case reflect.Complex64:
		return makeComplex(rt, complex128(toComplex[complex64](x)))
	case reflect.Complex128:
		return makeComplex(rt, toComplex[complex128](x))
	}
	panic("eval: numeric conversion to " + rt.String())
}

// to converts an integer or floating-point value to T.
func to[T integer | float](x reflect.Value) T {
	switch x.Kind() {
	case reflect.Int:
		return T(int(x.Int()))
	case reflect.Int8:
		return T(int8(x.Int()))
	case reflect.Int16:
		return T(int16(x.Int()))
	case reflect.Int32:
		return T(int32(x.Int()))
	case reflect.Int64:
		return T(x.Int())
	case reflect.Uint:
		return T(uint(x.Uint()))
	case reflect.Uint8:
		return T(uint8(x.Uint()))
	case reflect.Uint16:
		return T(uint16(x.Uint()))
	case reflect.Uint32:
		return T(uint32(x.Uint()))
	case reflect.Uint64:
		return T(x.Uint())
	case reflect.Uintptr:
		return T(uintptr(x.Uint()))
	case reflect.Float32:
		return T(float32(x.Float()))
	case reflect.Float64:
		return T(x.Float())
	}
	panic("eval: numeric conversion from " + x.Kind().String())
}

// toComplex converts a complex value to T.
func toComplex[T cmplx](x reflect.Value) T {
	if x.Kind() == reflect.Complex64 {
		return T(complex64(x.Complex()))
	}
	return T(x.Complex())
}
