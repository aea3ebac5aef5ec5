package launcher

import (
	"fmt"
	"reflect"
	"runtime/debug"
)

var errorType = reflect.TypeOf((*error)(nil)).Elem()

// callFunc calls fn(args...) in this process. Arguments are converted to
// the parameter types where Go would allow it for an untyped constant (a
// number to another number type, nil to a nilable type); a count or type
// mismatch is an error naming the argument. A panic becomes a *PanicError.
// When fn's last result is an error and it is non-nil, it is returned as
// err together with the results.
func callFunc(fn any, args []any) (results []any, err error) {
	if fn == nil {
		return nil, fmt.Errorf("launcher: the function to launch is nil")
	}
	fv := reflect.ValueOf(fn)
	ft := fv.Type()
	if ft.Kind() != reflect.Func {
		return nil, fmt.Errorf("launcher: the function to launch is a %s, not a function", ft)
	}
	if fv.IsNil() {
		return nil, fmt.Errorf("launcher: the function to launch is a nil %s", ft)
	}
	in, err := convertArgs(ft, args)
	if err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			results = nil
			err = &PanicError{Value: fmt.Sprint(r), Stack: string(debug.Stack())}
		}
	}()
	out := fv.Call(in) // a variadic function gets its extra arguments one by one
	results = make([]any, len(out))
	for i, v := range out {
		results[i] = v.Interface()
	}
	if n := ft.NumOut(); n > 0 && ft.Out(n-1) == errorType && !out[n-1].IsNil() {
		return results, out[n-1].Interface().(error)
	}
	return results, nil
}

// convertArgs checks args against ft's parameters and converts them.
func convertArgs(ft reflect.Type, args []any) ([]reflect.Value, error) {
	nIn := ft.NumIn()
	if ft.IsVariadic() {
		if len(args) < nIn-1 {
			return nil, fmt.Errorf("launcher: the function (%s) takes at least %d argument(s), got %d", ft, nIn-1, len(args))
		}
	} else if len(args) != nIn {
		return nil, fmt.Errorf("launcher: the function (%s) takes %d argument(s), got %d", ft, nIn, len(args))
	}
	in := make([]reflect.Value, len(args))
	for i, a := range args {
		var pt reflect.Type
		if ft.IsVariadic() && i >= nIn-1 {
			pt = ft.In(nIn - 1).Elem()
		} else {
			pt = ft.In(i)
		}
		v, err := convertArg(a, pt)
		if err != nil {
			return nil, fmt.Errorf("launcher: argument %d of the function (%s): %w", i+1, ft, err)
		}
		in[i] = v
	}
	return in, nil
}

func convertArg(a any, pt reflect.Type) (reflect.Value, error) {
	if a == nil {
		switch pt.Kind() {
		case reflect.Chan, reflect.Func, reflect.Interface, reflect.Map, reflect.Pointer, reflect.Slice:
			return reflect.Zero(pt), nil
		}
		return reflect.Value{}, fmt.Errorf("nil cannot be a %s", pt)
	}
	v := reflect.ValueOf(a)
	if v.Type().AssignableTo(pt) {
		v2 := reflect.New(pt).Elem()
		v2.Set(v)
		return v2, nil
	}
	if isNumber(v.Kind()) && isNumber(pt.Kind()) && v.Type().ConvertibleTo(pt) {
		c := v.Convert(pt)
		// Refuse a conversion to an integer that changes the value (0.5 to
		// int, 300 to uint8); float precision changes are accepted.
		if pt.Kind() != reflect.Float32 && pt.Kind() != reflect.Float64 && c.Convert(v.Type()).Interface() != v.Interface() {
			return reflect.Value{}, fmt.Errorf("%v (%s) does not fit in a %s", a, v.Type(), pt)
		}
		return c, nil
	}
	return reflect.Value{}, fmt.Errorf("a %s cannot be used as a %s", v.Type(), pt)
}

func isNumber(k reflect.Kind) bool {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}
