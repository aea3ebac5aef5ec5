package values

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
)

// This file holds the stricter rules of the trackers that write JSON (aim,
// clearml, cometml, wandb): only integer and floating-point kinds are numbers
// (a bool is not), and a map's non-number entries are reported one by one
// while its numbers are still logged.

// Number reports whether v is of an integer or floating-point kind (named
// types included, bool excluded) and returns its value as a float64 along
// with whether it is an integer kind.
func Number(v any) (f float64, isInt bool, ok bool) {
	if v == nil {
		return 0, false, false
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int()), true, true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return float64(rv.Uint()), true, true
	case reflect.Float32, reflect.Float64:
		return rv.Float(), false, true
	}
	return 0, false, false
}

// NonFinite says how NumberJSON writes NaN and the infinities, which JSON
// lacks.
type NonFinite int

const (
	// PythonLiterals writes NaN, Infinity and -Infinity bare, as Python's
	// json.dumps does and its json module (and so aim's and wandb's readers)
	// accepts.
	PythonLiterals NonFinite = iota
	// QuotedStrings writes the JSON strings "NaN", "Infinity" and
	// "-Infinity" (Comet's metric schema accepts strings).
	QuotedStrings
)

// NumberJSON renders a Number the way Python's json.dumps does (a float
// that prints as an integer keeps a ".0"; a float32 uses the shortest
// float32 form), with NaN and the infinities written as nf says. ok is false
// when v is not a Number.
func NumberJSON(v any, nf NonFinite) (string, bool) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(rv.Int(), 10), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(rv.Uint(), 10), true
	case reflect.Float32, reflect.Float64:
		f := rv.Float()
		bits := 64
		if rv.Kind() == reflect.Float32 {
			bits = 32
		}
		var lit string
		switch {
		case math.IsNaN(f):
			lit = "NaN"
		case math.IsInf(f, 1):
			lit = "Infinity"
		case math.IsInf(f, -1):
			lit = "-Infinity"
		}
		if lit != "" {
			if nf == QuotedStrings {
				lit = `"` + lit + `"`
			}
			return lit, true
		}
		s := strconv.FormatFloat(f, 'g', -1, bits)
		if _, err := strconv.ParseInt(s, 10, 64); err == nil {
			s += ".0" // keep floats floats, as Python prints 1.0
		}
		return s, true
	}
	return "", false
}

// NumberMap returns the entries of a map with string keys whose values are
// Numbers; ok is false when v is not a map with string keys. The keys of
// entries that are not Numbers are returned in bad so the caller can warn
// about them.
func NumberMap(v any) (nums map[string]any, bad []string, ok bool) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Map || rv.Type().Key().Kind() != reflect.String {
		return nil, nil, false
	}
	nums = make(map[string]any, rv.Len())
	iter := rv.MapRange()
	for iter.Next() {
		k := iter.Key().String()
		val := iter.Value().Interface()
		if _, _, isNum := Number(val); isNum {
			nums[k] = val
		} else {
			bad = append(bad, k)
		}
	}
	return nums, bad, true
}

// StringList returns an init kwarg such as "tags" as a list of strings: nil
// is an empty list, and a []string or a []any of strings is accepted. The
// error says what is wrong without naming the kwarg ("must hold strings, got
// int", "must be a list of strings, got int"); callers prefix it.
func StringList(v any) ([]string, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case []string:
		return x, nil
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("must hold strings, got %T", e)
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("must be a list of strings, got %T", v)
}
