package yaegirunner

import (
	"fmt"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// carry copies the value of a variable between compiled cells and the
// interpreter, whose types for the same declaration differ: a compiled
// `type P struct{x int}` is a named type of a plugin package, the
// interpreter's is an unnamed struct whose field is exported as Xx; a
// compiled `type C float64` is a named type, the interpreter's is float64.
//
// Values of types that are the same in both worlds (predeclared types,
// standard library types, composites of them, channels, functions) are
// shared as they are. Values of declared types are copied structurally:
// numbers, strings and booleans by kind, structs field by field (by name),
// pointers, slices, arrays and maps element by element (pointers shared
// within the value stay shared; a pointer cycle is kept). An interface
// holding a value of a declared type, and functions or channels of declared
// types, cannot be carried: the error names where in the value.
type carrier struct {
	seen map[carried]reflect.Value // pointers already carried
}

type carried struct {
	ptr uintptr
	to  reflect.Type
}

// debugCarryValue sets dst (settable) to src.
func debugCarryValue(dst, src reflect.Value) error {
	c := &carrier{seen: map[carried]reflect.Value{}}
	return c.carry(dst, src, "")
}

func (c *carrier) carry(dst, src reflect.Value, path string) error {
	src = readable(src)
	if !src.IsValid() {
		return fmt.Errorf("%s cannot be read", orValue(path))
	}
	if src.CanInterface() && src.Type() == dst.Type() && neutral(src.Type(), map[reflect.Type]bool{}) {
		dst.Set(src)
		return nil
	}
	fail := func(why string) error {
		return fmt.Errorf("%s: %s (%s) %s", orValue(path), src.Type(), src.Kind(), why)
	}
	dk := dst.Kind()
	switch {
	case dk == reflect.Interface:
		if src.Kind() == reflect.Interface {
			if src.IsNil() {
				dst.Set(reflect.Zero(dst.Type()))
				return nil
			}
			src = src.Elem()
		}
		if !neutral(src.Type(), map[reflect.Type]bool{}) || !src.Type().AssignableTo(dst.Type()) {
			return fail("is held in an interface: a value of a declared type in an interface cannot be carried")
		}
		dst.Set(src)
		return nil
	case dk == reflect.Bool && src.Kind() == dk:
		dst.SetBool(src.Bool())
	case dk >= reflect.Int && dk <= reflect.Int64 && src.Kind() == dk:
		dst.SetInt(src.Int())
	case dk >= reflect.Uint && dk <= reflect.Uintptr && src.Kind() == dk:
		dst.SetUint(src.Uint())
	case (dk == reflect.Float32 || dk == reflect.Float64) && src.Kind() == dk:
		dst.SetFloat(src.Float())
	case (dk == reflect.Complex64 || dk == reflect.Complex128) && src.Kind() == dk:
		dst.SetComplex(src.Complex())
	case dk == reflect.String && src.Kind() == dk:
		dst.SetString(src.String())
	case dk == reflect.Pointer && src.Kind() == dk:
		if src.IsNil() {
			dst.Set(reflect.Zero(dst.Type()))
			return nil
		}
		key := carried{src.Pointer(), dst.Type()}
		if p, ok := c.seen[key]; ok {
			dst.Set(p)
			return nil
		}
		p := reflect.New(dst.Type().Elem())
		c.seen[key] = p
		dst.Set(p)
		return c.carry(p.Elem(), src.Elem(), "(*"+orValue(path)+")")
	case dk == reflect.Slice && src.Kind() == dk:
		if src.IsNil() {
			dst.Set(reflect.Zero(dst.Type()))
			return nil
		}
		s := reflect.MakeSlice(dst.Type(), src.Len(), src.Len())
		for i := 0; i < src.Len(); i++ {
			if err := c.carry(s.Index(i), src.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		dst.Set(s)
	case dk == reflect.Array && src.Kind() == dk && src.Len() == dst.Len():
		for i := 0; i < src.Len(); i++ {
			if err := c.carry(dst.Index(i), src.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case dk == reflect.Map && src.Kind() == dk:
		if src.IsNil() {
			dst.Set(reflect.Zero(dst.Type()))
			return nil
		}
		m := reflect.MakeMapWithSize(dst.Type(), src.Len())
		it := src.MapRange()
		for it.Next() {
			k := reflect.New(dst.Type().Key()).Elem()
			if err := c.carry(k, it.Key(), path+"[key]"); err != nil {
				return err
			}
			v := reflect.New(dst.Type().Elem()).Elem()
			if err := c.carry(v, it.Value(), fmt.Sprintf("%s[%v]", path, k)); err != nil {
				return err
			}
			m.SetMapIndex(k, v)
		}
		dst.Set(m)
	case dk == reflect.Struct && src.Kind() == dk:
		return c.carryStruct(dst, src, path)
	default:
		if src.Type().AssignableTo(dst.Type()) {
			dst.Set(src)
			return nil
		}
		if src.Kind() == reflect.Interface || dst.Type().Name() == "valueInterface" {
			return fmt.Errorf("%s: a value of an interface type a cell declared (%s) cannot be carried", orValue(path), src.Type())
		}
		return fail("cannot become " + dst.Type().String())
	}
	return nil
}

// carryStruct copies fields by name (an interpreted struct exports field x
// as Xx).
func (c *carrier) carryStruct(dst, src reflect.Value, path string) error {
	if dst.NumField() != src.NumField() {
		return fmt.Errorf("%s: %s and %s have different fields", orValue(path), src.Type(), dst.Type())
	}
	if !src.CanAddr() {
		tmp := reflect.New(src.Type()).Elem()
		tmp.Set(src)
		src = tmp
	}
	for i := 0; i < dst.NumField(); i++ {
		name := dst.Type().Field(i).Name
		sf, ok := sameField(src, name)
		if !ok {
			return fmt.Errorf("%s: %s has no field %s", orValue(path), src.Type(), name)
		}
		df := dst.Field(i)
		if !df.CanSet() {
			df = reflect.NewAt(df.Type(), unsafe.Pointer(df.UnsafeAddr())).Elem()
		}
		if err := c.carry(df, sf, path+"."+plainField(name)); err != nil {
			return err
		}
	}
	return nil
}

// sameField finds src's field that stands for a field called name on the
// other side.
func sameField(src reflect.Value, name string) (reflect.Value, bool) {
	if f := src.FieldByName(name); f.IsValid() {
		return f, true
	}
	if f := src.FieldByName("X" + name); f.IsValid() {
		return f, true
	}
	if p := plainField(name); p != name {
		if f := src.FieldByName(p); f.IsValid() {
			return f, true
		}
	}
	return reflect.Value{}, false
}

// plainField undoes the interpreter's export of an unexported field.
func plainField(name string) string {
	if len(name) > 1 && name[0] == 'X' {
		if r, _ := utf8.DecodeRuneInString(name[1:]); unicode.IsLower(r) || r == '_' {
			return name[1:]
		}
	}
	return name
}

// readable makes a value read through an unexported field usable.
func readable(v reflect.Value) reflect.Value {
	if !v.IsValid() || v.CanInterface() {
		return v
	}
	if v.CanAddr() {
		return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
	}
	switch v.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8,
		reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr, reflect.Float32, reflect.Float64,
		reflect.Complex64, reflect.Complex128, reflect.String:
		return v // read by kind
	}
	return reflect.Value{}
}

// neutral reports whether t is the same type in compiled cells and in the
// interpreter: it involves no type a cell declared.
func neutral(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return true
	}
	seen[t] = true
	if t.Name() != "" && t.Kind() != reflect.Interface {
		return !strings.HasPrefix(t.PkgPath(), "goaccel.cells/") && t.PkgPath() != "main"
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Chan:
		return neutral(t.Elem(), seen)
	case reflect.Map:
		return neutral(t.Key(), seen) && neutral(t.Elem(), seen)
	case reflect.Func:
		for i := 0; i < t.NumIn(); i++ {
			if !neutral(t.In(i), seen) {
				return false
			}
		}
		for i := 0; i < t.NumOut(); i++ {
			if !neutral(t.Out(i), seen) {
				return false
			}
		}
		return true
	case reflect.Struct:
		// The interpreter makes declared struct types unnamed: an unnamed
		// struct is not known to be the same on both sides.
		return false
	case reflect.Interface:
		// The same type, but what it holds may not be.
		return false
	}
	return true
}

func orValue(path string) string {
	if path == "" {
		return "its value"
	}
	return path
}
