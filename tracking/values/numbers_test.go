package values

import (
	"math"
	"reflect"
	"testing"
)

func TestNumber(t *testing.T) {
	type myFloat float32
	for _, c := range []struct {
		v           any
		f           float64
		isInt, isOK bool
	}{{3, 3, true, true}, {uint8(7), 7, true, true}, {0.5, 0.5, false, true}, {myFloat(2), 2, false, true},
		{true, 0, false, false}, {"1", 0, false, false}, {nil, 0, false, false}} {
		f, isInt, ok := Number(c.v)
		if f != c.f || isInt != c.isInt || ok != c.isOK {
			t.Errorf("Number(%#v) = %v %v %v", c.v, f, isInt, ok)
		}
	}
}

func TestNumberJSON(t *testing.T) {
	cases := map[any]string{1: "1", int64(-3): "-3", uint8(7): "7", 0.5: "0.5", 2.0: "2.0", float32(0.1): "0.1"}
	for v, want := range cases {
		for _, nf := range []NonFinite{PythonLiterals, QuotedStrings} {
			if got, ok := NumberJSON(v, nf); !ok || got != want {
				t.Errorf("NumberJSON(%T %v, %d) = %q, want %q", v, v, nf, got, want)
			}
		}
	}
	for v, want := range map[float64][2]string{math.NaN(): {"NaN", `"NaN"`}, math.Inf(1): {"Infinity", `"Infinity"`}, math.Inf(-1): {"-Infinity", `"-Infinity"`}} {
		if got, _ := NumberJSON(v, PythonLiterals); got != want[0] {
			t.Errorf("NumberJSON(%v, PythonLiterals) = %s", v, got)
		}
		if got, _ := NumberJSON(v, QuotedStrings); got != want[1] {
			t.Errorf("NumberJSON(%v, QuotedStrings) = %s", v, got)
		}
	}
	for _, v := range []any{"x", true, nil} {
		if _, ok := NumberJSON(v, PythonLiterals); ok {
			t.Errorf("%#v is not a number", v)
		}
	}
}

func TestNumberMap(t *testing.T) {
	nums, bad, ok := NumberMap(map[string]any{"a": 1, "b": "x", "c": 0.5})
	if !ok || !reflect.DeepEqual(nums, map[string]any{"a": 1, "c": 0.5}) || !reflect.DeepEqual(bad, []string{"b"}) {
		t.Errorf("NumberMap = %v %v %v", nums, bad, ok)
	}
	if _, _, ok := NumberMap(map[int]float64{1: 1}); ok {
		t.Error("a map with int keys is a number map")
	}
	if _, _, ok := NumberMap(3); ok {
		t.Error("3 is a number map")
	}
}

func TestStringList(t *testing.T) {
	for _, c := range []struct {
		v    any
		want []string
		err  string
	}{
		{nil, nil, ""},
		{[]string{"a"}, []string{"a"}, ""},
		{[]any{"a", "b"}, []string{"a", "b"}, ""},
		{[]any{"a", 1}, nil, "must hold strings, got int"},
		{"a", nil, "must be a list of strings, got string"},
	} {
		got, err := StringList(c.v)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("StringList(%#v) error %v, want %q", c.v, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("StringList(%#v) = %v, %v", c.v, got, err)
		}
	}
}
