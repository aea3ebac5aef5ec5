package dap

import (
	"reflect"
	"strings"
	"testing"
)

func TestEvaluate(t *testing.T) {
	type inner struct{ Z []int }
	type outer struct {
		A   int
		In  *inner
		M   map[string]float64
		hid string
	}
	env := map[string]reflect.Value{
		"n": reflect.ValueOf(7),
		"u": reflect.ValueOf(uint8(200)),
		"f": reflect.ValueOf(2.5),
		"s": reflect.ValueOf("héllo"),
		"o": reflect.ValueOf(&outer{A: 3, In: &inner{Z: []int{4, 5, 6}}, M: map[string]float64{"pi": 3.14}, hid: "x"}),
		"p": reflect.ValueOf((*outer)(nil)),
		"e": reflect.ValueOf([]error{nil}),
		// yaegi's export of an unexported field of an interpreted struct
		"y": reflect.ValueOf(struct{ Xcount int }{9}),
	}
	lookup := func(name string) (reflect.Value, bool) { v, ok := env[name]; return v, ok }
	for _, c := range []struct{ expr, want string }{
		{"n", "7"},
		{"n + 1", "8"},
		{"n / 2", "3"},
		{"n % 4 * 2", "6"},
		{"-n", "-7"},
		{"f * 2", "5"},
		{"n > 3 && f < 3", "true"},
		{"!(n == 7)", "false"},
		{"u + 100", "44"}, // uint8 wraps as in Go
		{"s + \"!\"", `"héllo!"`},
		{"len(s)", "6"},
		{"s[1:3]", `"é"`},
		{"o.A", "3"},
		{"o.In.Z[2]", "6"},
		{"len(o.In.Z)", "3"},
		{"o.In.Z[1:]", "[5 6]"},
		{`o.M["pi"]`, "3.14"},
		{`o.M["e"]`, "0"},
		{"o.hid", `"x"`},
		{"(*o).A", "3"},
		{"float64(n) / 2", "3.5"},
		{"int(f)", "2"},
		{"string(rune(65))", `"A"`},
		{"1 << 3", "8"},
		{"'a' + 1", "98"},
		{"p == nil", "true"},
		{"e[0] == nil", "true"},
		{"y.count", "9"},
		{"1.5 + 1", "2.5"},
	} {
		v, err := evaluate(c.expr, lookup)
		if err != nil {
			t.Errorf("%s: %v", c.expr, err)
			continue
		}
		if got := valueText(v); got != c.want {
			t.Errorf("%s = %s, want %s", c.expr, got, c.want)
		}
	}
	for _, c := range []struct{ expr, err string }{
		{"missing", "undefined: missing"},
		{"n + s", "mismatched types"},
		{"n / 0", "divide by zero"},
		{"o.In.Z[3]", "out of range"},
		{"p.A", "nil"},
		{"fmt.Sprint(n)", "does not call functions"},
		{"len(n)", "invalid argument"},
		{"n +", "expected"},
		{"func() {}", "not supported"},
	} {
		if _, err := evaluate(c.expr, lookup); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: error %v, want %q", c.expr, err, c.err)
		}
	}
}

type celsius float64

func (c celsius) String() string { return "it's warm" }

func TestValueText(t *testing.T) {
	big := make([]int, 30)
	for _, c := range []struct {
		v    any
		want string
	}{
		{nil, "nil"},
		{"a\nb", `"a\nb"`},
		{[]string(nil), "[]"},
		{map[int]bool{2: true, 1: false, 10: true}, "map[1:false 2:true 10:true]"},
		{&struct{ A []int }{[]int{1}}, "&{A: [1]}"},
		{big, "[0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 … +10 more]"},
		{celsius(30), "it's warm"},
		{float32(0.1), "0.1"},
		{[2]bool{true}, "[true false]"},
		{make(chan int, 3), "chan int (len 0, cap 3)"},
	} {
		if got := valueText(reflect.ValueOf(c.v)); got != c.want {
			t.Errorf("valueText(%#v) = %s, want %s", c.v, got, c.want)
		}
	}
	type node struct{ Next *node }
	n := &node{}
	n.Next = n
	if got := valueText(reflect.ValueOf(n)); !strings.HasPrefix(got, "&{Next: &{") {
		t.Errorf("a cycle: %s", got)
	}
	if kids := children(reflect.ValueOf(big), "big", 25, 10); len(kids) != 5 || kids[0].name != "25" || kids[0].eval != "big[25]" {
		t.Errorf("paged children: %v", kids)
	}
	if !hasChildren(reflect.ValueOf(n)) || hasChildren(reflect.ValueOf(3)) || hasChildren(reflect.ValueOf([]int{})) {
		t.Error("hasChildren")
	}
}
