package cometml

import (
	"math"
	"reflect"
	"strconv"
)

// number reports whether v is of an integer or floating-point kind and
// returns its value as float64 along with whether it is an integer kind.
func number(v any) (f float64, isInt bool, ok bool) {
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

// numberJSON renders a number as JSON; NaN and infinities, which JSON
// lacks, become the strings "NaN", "Infinity" and "-Infinity" (Comet's
// metric schema accepts strings).
func numberJSON(v any) (string, bool) {
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
		switch {
		case math.IsNaN(f):
			return `"NaN"`, true
		case math.IsInf(f, 1):
			return `"Infinity"`, true
		case math.IsInf(f, -1):
			return `"-Infinity"`, true
		}
		s := strconv.FormatFloat(f, 'g', -1, bits)
		if _, err := strconv.ParseInt(s, 10, 64); err == nil {
			s += ".0" // keep floats floats, as Python prints 1.0
		}
		return s, true
	}
	return "", false
}

// numberMap returns the entries of a map with string keys whose values are
// all numbers; ok is false when v is not such a map. Non-number entries are
// returned separately so the caller can warn about them.
func numberMap(v any) (nums map[string]any, bad []string, ok bool) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Map || rv.Type().Key().Kind() != reflect.String {
		return nil, nil, false
	}
	nums = make(map[string]any, rv.Len())
	iter := rv.MapRange()
	for iter.Next() {
		k := iter.Key().String()
		val := iter.Value().Interface()
		if _, _, isNum := number(val); isNum {
			nums[k] = val
		} else {
			bad = append(bad, k)
		}
	}
	return nums, bad, true
}
