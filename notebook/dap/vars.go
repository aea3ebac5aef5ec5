package dap

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// This file presents Go values the way the debugger panel lists them: a
// one-line value, a type, and children for structs, pointers, slices,
// arrays, maps and interfaces. Values are read through reflect only: no
// method of an interpreted value is called (that would run interpreted code
// on the adapter's goroutine, possibly into a breakpoint). A String or Error
// method of a compiled type is called, bounded in time.

const (
	maxText     = 200  // characters of a value's one-line text
	maxElems    = 20   // elements shown in a one-line text
	maxChildren = 1000 // children listed when the client asks for all
	textDepth   = 3    // nesting shown in a one-line text
)

// Var is a named value: a session variable, a local of a stopped frame.
type Var struct {
	Name string
	// Type is the type as cells write it; empty means the value's own.
	Type  string
	Value reflect.Value
}

// valueText is v as one line, Go-like: strings quoted, structs with field
// names, long values cut with "…".
func valueText(v reflect.Value) string {
	s := formatValue(v, textDepth)
	if utf8.RuneCountInString(s) > maxText {
		r := []rune(s)
		s = string(r[:maxText]) + "…"
	}
	return s
}

func formatValue(v reflect.Value, depth int) string {
	if !v.IsValid() {
		return "nil"
	}
	if s, ok := stringMethod(v); ok {
		return s
	}
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return "nil"
		}
		return formatValue(v.Elem(), depth)
	case reflect.Pointer:
		if v.IsNil() {
			return "nil"
		}
		if depth <= 0 {
			return "&…"
		}
		return "&" + formatValue(v.Elem(), depth-1)
	case reflect.Struct:
		if depth <= 0 {
			return "{…}"
		}
		var b strings.Builder
		b.WriteString("{")
		t := v.Type()
		for i := 0; i < v.NumField(); i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			if b.Len() > maxText {
				b.WriteString("…")
				break
			}
			b.WriteString(fieldName(t, i) + ": " + formatValue(v.Field(i), depth-1))
		}
		b.WriteString("}")
		return b.String()
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			return "[]"
		}
		if depth <= 0 {
			return fmt.Sprintf("[…len %d]", v.Len())
		}
		parts := make([]string, 0, min(v.Len(), maxElems))
		for i := 0; i < v.Len() && i < maxElems; i++ {
			parts = append(parts, formatValue(v.Index(i), depth-1))
		}
		if v.Len() > maxElems {
			parts = append(parts, fmt.Sprintf("… +%d more", v.Len()-maxElems))
		}
		return "[" + strings.Join(parts, " ") + "]"
	case reflect.Map:
		if v.IsNil() {
			return "map[]"
		}
		if depth <= 0 {
			return fmt.Sprintf("map[…len %d]", v.Len())
		}
		keys := sortedKeys(v)
		parts := make([]string, 0, min(len(keys), maxElems))
		for i, k := range keys {
			if i == maxElems {
				parts = append(parts, fmt.Sprintf("… +%d more", len(keys)-maxElems))
				break
			}
			parts = append(parts, formatValue(k, depth-1)+":"+formatValue(v.MapIndex(k), depth-1))
		}
		return "map[" + strings.Join(parts, " ") + "]"
	case reflect.String:
		s := v.String()
		if len(s) > 4*maxText {
			s = s[:4*maxText]
		}
		return strconv.Quote(s)
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10)
	case reflect.Uintptr:
		return "0x" + strconv.FormatUint(v.Uint(), 16)
	case reflect.Float32:
		return strconv.FormatFloat(v.Float(), 'g', -1, 32)
	case reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case reflect.Complex64, reflect.Complex128:
		return fmt.Sprint(v.Complex())
	case reflect.Func:
		if v.IsNil() {
			return "nil"
		}
		return v.Type().String()
	case reflect.Chan:
		if v.IsNil() {
			return "nil"
		}
		return fmt.Sprintf("%s (len %d, cap %d)", v.Type(), v.Len(), v.Cap())
	case reflect.UnsafePointer:
		return fmt.Sprintf("%#x", v.Pointer())
	}
	return v.Type().String()
}

// stringMethod calls the String or Error method of a value of a compiled
// named type (interpreted types show no methods to reflect), giving up after
// a second: a String method that never returns must not hang the debugger.
func stringMethod(v reflect.Value) (string, bool) {
	if !v.CanInterface() || v.Type().PkgPath() == "" || v.Kind() == reflect.Interface {
		return "", false
	}
	if (v.Kind() == reflect.Pointer || v.Kind() == reflect.Map || v.Kind() == reflect.Slice) && v.IsNil() {
		return "", false
	}
	var m reflect.Value
	for _, name := range []string{"Error", "String"} {
		if mm := v.MethodByName(name); mm.IsValid() && mm.Type().NumIn() == 0 && mm.Type().NumOut() == 1 && mm.Type().Out(0).Kind() == reflect.String {
			m = mm
			break
		}
	}
	if !m.IsValid() {
		return "", false
	}
	done := make(chan string, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Sprintf("<String panicked: %v>", r)
			}
		}()
		done <- m.Call(nil)[0].String()
	}()
	select {
	case s := <-done:
		return s, true
	case <-time.After(time.Second):
		return "<String did not return within a second>", true
	}
}

// fieldName is field i of struct type t as the cell declared it: yaegi
// exports an unexported field x of an interpreted struct as Xx.
func fieldName(t reflect.Type, i int) string {
	n := t.Field(i).Name
	if t.Name() == "" && len(n) > 1 && n[0] == 'X' {
		if r, _ := utf8.DecodeRuneInString(n[1:]); unicode.IsLower(r) || r == '_' {
			return n[1:]
		}
	}
	return n
}

// fieldByName finds the field of struct v a cell calls name.
func fieldByName(v reflect.Value, name string) (reflect.Value, bool) {
	if f := v.FieldByName(name); f.IsValid() {
		return f, true
	}
	if f := v.FieldByName("X" + name); f.IsValid() && v.Type().Name() == "" {
		return f, true
	}
	return reflect.Value{}, false
}

// maxSorted is the size above which a map's keys are listed unsorted (a
// map of millions must not hold up the debugger's answers).
const maxSorted = 10_000

// sortedKeys returns a map's keys in a stable, readable order (at most
// maxSorted of a larger map, in Go's order).
func sortedKeys(m reflect.Value) []reflect.Value {
	if m.Len() > maxSorted {
		keys := make([]reflect.Value, 0, maxSorted)
		for it := m.MapRange(); it.Next() && len(keys) < maxSorted; {
			keys = append(keys, it.Key())
		}
		return keys
	}
	keys := m.MapKeys()
	text := make([]string, len(keys))
	for i, k := range keys {
		text[i] = formatValue(k, 1)
	}
	idx := make([]int, len(keys))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		ka, kb := keys[idx[a]], keys[idx[b]]
		if isNumber(ka.Kind()) && isNumber(kb.Kind()) {
			return numberLess(ka, kb)
		}
		return text[idx[a]] < text[idx[b]]
	})
	out := make([]reflect.Value, len(keys))
	for i, j := range idx {
		out[i] = keys[j]
	}
	return out
}

func isNumber(k reflect.Kind) bool {
	return k >= reflect.Int && k <= reflect.Float64
}

func numberLess(a, b reflect.Value) bool {
	return toFloat(a) < toFloat(b)
}

func toFloat(v reflect.Value) float64 {
	switch {
	case v.Kind() >= reflect.Int && v.Kind() <= reflect.Int64:
		return float64(v.Int())
	case v.Kind() >= reflect.Uint && v.Kind() <= reflect.Uintptr:
		return float64(v.Uint())
	}
	return v.Float()
}

// hasChildren reports whether the panel can expand v.
func hasChildren(v reflect.Value) bool {
	if !v.IsValid() {
		return false
	}
	switch v.Kind() {
	case reflect.Interface:
		return !v.IsNil() && hasChildren(v.Elem())
	case reflect.Pointer:
		return !v.IsNil()
	case reflect.Struct:
		return v.NumField() > 0
	case reflect.Slice, reflect.Array, reflect.Map:
		return v.Len() > 0
	}
	return false
}

// child is one element of an expanded value.
type child struct {
	name, eval string
	v          reflect.Value
}

// children lists v's elements from start, at most count (0: all, up to
// maxChildren). eval is v's expression, from which the children's are made.
func children(v reflect.Value, eval string, start, count int) []child {
	if count <= 0 {
		count = maxChildren
	}
	sub := func(s string) string {
		if eval == "" {
			return ""
		}
		return s
	}
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return children(v.Elem(), eval, start, count)
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		if e := v.Elem(); e.Kind() == reflect.Struct {
			return children(e, eval, start, count)
		}
		return []child{{name: "*", eval: sub("*" + eval), v: v.Elem()}}
	case reflect.Struct:
		t := v.Type()
		var out []child
		for i := start; i < v.NumField() && len(out) < count; i++ {
			n := fieldName(t, i)
			out = append(out, child{name: n, eval: sub(eval + "." + n), v: v.Field(i)})
		}
		return out
	case reflect.Slice, reflect.Array:
		var out []child
		for i := start; i < v.Len() && len(out) < count; i++ {
			out = append(out, child{name: strconv.Itoa(i), eval: sub(eval + "[" + strconv.Itoa(i) + "]"), v: v.Index(i)})
		}
		return out
	case reflect.Map:
		keys := sortedKeys(v)
		var out []child
		for i := start; i < len(keys) && len(out) < count; i++ {
			k := keys[i]
			name := formatValue(k, 1)
			e := ""
			switch k.Kind() {
			case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
				reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
				e = sub(eval + "[" + name + "]")
			}
			out = append(out, child{name: name, eval: e, v: v.MapIndex(k)})
		}
		return out
	}
	return nil
}

// typeString names v's type: t when given (as cells write it), else what
// name (the engine's naming of interpreted types) says, else reflect's.
func typeString(v reflect.Value, t string, name func(reflect.Type) string) string {
	if t != "" {
		return t
	}
	if !v.IsValid() {
		return "nil"
	}
	if v.Kind() == reflect.Interface && !v.IsNil() {
		v = v.Elem()
	}
	if name != nil {
		if s := name(v.Type()); s != "" {
			return s
		}
	}
	return v.Type().String()
}
