package eval

import (
	"errors"
	"testing"
)

// The types and methods of the session in TestSemantics, as compiled cells
// would have declared them.
type point struct{ x, y int }

func (p point) Sum() int     { return p.x + p.y }
func (p *point) Scale(k int) { p.x *= k; p.y *= k }

// The evaluator uses only types that compiled code has (see rtype): these
// are the ones the sessions below would have in their compiled cells.
var compiledTypes = []any{(**point)(nil), (*map[string]int)(nil), (**int)(nil), (*[]any)(nil), []point(nil), []*point(nil), (*[3]int)(nil), map[string][]int(nil), (*map[int]int)(nil)}

// TestSemantics runs a session of evaluated cells. The expected results
// are what the same statements print when compiled by go run (a program
// with the session's variables at package level, as compiled cells have
// them): wrap-around of sized integers, shifts past the width, the
// implementation-specific float-to-integer conversions of this machine,
// floating-point rounding and signed zero, strings and runes, append's
// growth, and the runtime's own panic values (which must be runtime.Error
// values: the harness says when one is not).
func TestSemantics(t *testing.T) {
	t.Log(len(compiledTypes))
	s := newSession(t)
	s.declare("type point struct{ x, y int }\nfunc (p point) Sum() int { return p.x + p.y }\nfunc (p *point) Scale(k int) { p.x *= k; p.y *= k }",
		map[string]any{"point": (*point)(nil)})
	cases := []struct{ code, want string }{
		{"i8 := int8(127)", ""},
		{"i8 + 1", "-128"},
		{"i8 * 2", "-2"},
		{"-i8 - 2", "127"},
		{"i8++\ni8", "-128"},
		{"u8 := uint8(200)", ""},
		{"u8 + 100", "44"},
		{"u8 << 1", "144"},
		{"^u8", "55"},
		{"u8 >> 3", "25"},
		{"i, j := -7, 2", ""},
		{"i / j", "-3"},
		{"i % j", "-1"},
		{"i >> 1", "-4"},
		{"i &^ j", "-7"},
		{"-i", "7"},
		{"^i", "6"},
		{"mi, neg1 := int64(math.MinInt64), int64(-1)", ""},
		{"mi / neg1", "-9223372036854775808"},
		{"mi % neg1", "0"},
		{"-mi", "-9223372036854775808"},
		{"mi - 1", "9223372036854775807"},
		{"n := 70", ""},
		{"int64(1) << n", "0"},
		{"int8(-3) >> n", "-1"},
		{"u8 << 7", "0"},
		{"k := -1", ""},
		{"i << k", "panic: runtime error: negative shift amount"},
		{"zero := 0", ""},
		{"i / zero", "panic: runtime error: integer divide by zero"},
		{"i % zero", "panic: runtime error: integer divide by zero"},
		{"i /= zero", "panic: runtime error: integer divide by zero"},
		{"i", "-7"},
		{"f := 0.1", ""},
		{"f + 0.2", "0.30000000000000004"},
		{"f32 := float32(0.1)", ""},
		{"f32 * 3", "0.3"},
		{"f32 + float32(f)", "0.2"},
		{"float64(f32)", "0.10000000149011612"},
		{"z := 0.0", ""},
		{"1 / z", "+Inf"},
		{"-z", "-0"},
		{"z / z", "NaN"},
		{"z/z == z/z", "false"},
		{"f * 3 / 7", "0.042857142857142864"},
		{"big, neg, huge := 4294967297.0, -1.5, 1e20", ""},
		{"int8(big)", "0"},
		{"uint8(neg)", "255"},
		{"int32(huge)", "-2147483648"},
		{"uint64(neg)", "18446744073709551615"},
		{"int64(huge)", "-9223372036854775808"},
		{"uint64(huge)", "9223372036854775808"},
		{"int16(big)", "0"},
		{"uint32(float32(neg * 2))", "4294967293"},
		{"uint(huge)", "9223372036854775808"},
		{"uint8(i)", "249"},
		{"int8(u8)", "-56"},
		{"float32(big)", "4.2949673e+09"},
		{"int(f32 * 100)", "10"},
		{"complex(f, 2) * complex(f, -1)", "(2.01+0.1i)"},
		{"s := \"héllo\"", ""},
		{"s[1]", "195"},
		{"len(s)", "6"},
		{"s[10]", "panic: runtime error: index out of range [10] with length 6"},
		{"s + \"!\"", "héllo!"},
		{"string(s[0])", "h"},
		{"[]byte(s)", "[104 195 169 108 108 111]"},
		{"[]rune(s)", "[104 233 108 108 111]"},
		{"string(rune(233))", "é"},
		{"s < \"i\"", "true"},
		{"s == \"héllo\" && len(s) > 5", "true"},
		{"r := -1", ""},
		{"string(rune(r))", "�"},
		{"xs := []int{1, 2, 3}", ""},
		{"xs[1] = 20\nxs", "[1 20 3]"},
		{"xs[5]", "panic: runtime error: index out of range [5] with length 3"},
		{"idx := uint(7)", ""},
		{"xs[idx]", "panic: runtime error: index out of range [7] with length 3"},
		{"xs[i]", "panic: runtime error: index out of range [-7]"},
		{"xs = append(xs, 4)\nlen(xs)", "4"},
		{"cap(xs)", "6"},
		{"xs = append(xs, xs...)\ncap(xs)", "12"},
		{"xs[0] += 5\nxs[0]", "6"},
		{"xs[1]++\nxs[1]", "21"},
		{"xs2 := []int{}", ""},
		{"xs2[0] = 1 / zero", "panic: runtime error: integer divide by zero"},
		{"xs2[0] += 1 / zero", "panic: runtime error: index out of range [0] with length 0"},
		{"m := map[string]int{\"a\": 1}", ""},
		{"m[\"b\"] += 2\nm[\"b\"]", "2"},
		{"m[\"zz\"]", "0"},
		{"len(m)", "2"},
		{"nm := map[string]int(nil)", ""},
		{"nm[\"x\"] = 1", "panic: assignment to entry in nil map"},
		{"nm[\"x\"]", "0"},
		{"nm[\"x\"] /= zero", "panic: runtime error: integer divide by zero"},
		{"fmt.Sprint(1, \"a\", 2.5, 3)", "1a2.5 3"},
		{"fmt.Sprintf(\"%d-%s\", i, s)", "-7-héllo"},
		{"strconv.Atoi(\"12\")", "12, <nil>"},
		{"strconv.Atoi(\"x\")", "0, strconv.Atoi: parsing \"x\": invalid syntax"},
		{"strings.Fields(\" a b \")", "[a b]"},
		{"math.Sqrt(2)", "1.4142135623730951"},
		{"fmt.Sprint()", ""},
		{"args := []any{1, 2}", ""},
		{"fmt.Sprint(args...)", "1 2"},
		{"strings.NewReplacer(\"a\", \"b\").Replace(\"aaa\")", "bbb"},
		{"fmt.Sprint(strconv.Atoi(\"7\"))", "7 <nil>"},
		{"a, b := 1, 2", ""},
		{"a, b = b, a\na", "2"},
		{"b", "1"},
		{"v, err := strconv.Atoi(\"42\")", ""},
		{"v", "42"},
		{"err == nil", "true"},
		{"d := time.Duration(90) * time.Second", ""},
		{"d", "1m30s"},
		{"d.Minutes()", "1.5"},
		{"time.Duration(1500) * time.Millisecond", "1.5s"},
		{"sb := strings.Builder{}", ""},
		{"sb.WriteString(\"ab\")\nsb.WriteString(\"cd\")\nsb.String()", "abcd"},
		{"sb.Len()", "4"},
		{"e := any(5)", ""},
		{"e", "5"},
		{"e == nil", "false"},
		{"er := error(nil)", ""},
		{"er == nil", "true"},
		{"ex := fmt.Errorf(\"bad %d\", 3)", ""},
		{"ex.Error()", "bad 3"},
		{"er.Error()", "panic: runtime error: invalid memory address or nil pointer dereference"},
		{"math.MaxInt64", "9223372036854775807"},
		{"1 << 62", "4611686018427387904"},
		{"'a'", "97"},
		{"2.5", "2.5"},
		{"\"x\" + \"y\"", "xy"},
		{"1 / 3.0", "0.3333333333333333"},
		{"math.Pi * 2", "6.283185307179586"},
		{"float32(0.1)", "0.1"},
		{"p := point{1, 2}", ""},
		{"p.x += 10\np", "{11 2}"},
		{"p.Sum()", "13"},
		{"p.Scale(2)\np", "{22 4}"},
		{"pp := &p", ""},
		{"pp.y = 5\np.y", "5"},
		{"pp.Sum()", "27"},
		{"point{y: 3}", "{0 3}"},
		{"[]point{{1, 2}, {x: 3}}", "[{1 2} {3 0}]"},
		{"[]*point{{1, 2}}[0].y", "2"},
		{"np := (*point)(nil)", ""},
		{"np.x", "panic: runtime error: invalid memory address or nil pointer dereference"},
		{"np.Sum()", "panic: runtime error: invalid memory address or nil pointer dereference"},
		{"*np", "panic: runtime error: invalid memory address or nil pointer dereference"},
		{"np == nil", "true"},
		{"[3]int{2: 7}", "[0 0 7]"},
		{"map[string][]int{\"a\": {1}}", "map[a:[1]]"},
	}
	for _, c := range cases {
		got, err := s.eval(c.code)
		if err != nil {
			t.Errorf("%q: %v", c.code, err)
			continue
		}
		if got != c.want {
			t.Errorf("%q = %q, want %q", c.code, got, c.want)
		}
	}
}

// TestNotEligible lists cells the evaluator leaves to the compiler.
func TestNotEligible(t *testing.T) {
	s := newSession(t)
	s.declare("var counter int\nfunc bump() int { counter++; return counter }\nfunc pair() (int, int) { return 1, 2 }\ntype T struct{ n int }\nfunc (t T) private() int { return t.n }",
		map[string]any{"bump": func() int { return 0 }, "pair": func() (int, int) { return 1, 2 }, "T": (*struct{ n int })(nil)})
	for _, setup := range []string{"x, y := 1, 2", "xs := []int{1, 2}", "m := map[int]int{}", "tv := T{1}", "p := &x"} {
		if _, err := s.eval(setup); err != nil {
			t.Fatalf("%q: %v", setup, err)
		}
	}
	for _, code := range []string{
		// Compiled Go reads x after calling bump; the evaluator would not.
		"x + bump()",
		"fmt.Println(x, bump())",
		"xs[x] + bump()",
		"xs[0] += bump()",
		"[]int{x, bump()}",
		"x, y = y, bump()",
		"xs[bump()] = 1",
		// Types no compiled code has yet.
		"mc := map[complex64][2]int8{}",
		// Not in the evaluator's subset.
		"const c = 1\nc",
		"func f() {}",
		"for i := 0; i < 3; i++ {}",
		"if x > 0 { x = 0 }",
		"go bump()",
		"defer bump()",
		"func() { x++ }()",
		"xs[1:]",
		"any(x).(int)",
		"tv.private()",
		"os.Exit(0)",
		"log.Fatal(1)",
		"1 << 70",
		"panic(1)",
		"struct{ a int }{1}",
		"{ q := 1; _ = q }",
	} {
		_, err := s.eval(code)
		if !errors.Is(err, errNotEligible) {
			t.Errorf("%q: evaluated (err %v), want not eligible", code, err)
		}
	}
	// The same with the call first is exact: evaluated.
	for _, code := range []string{"bump() + x", "fmt.Sprint(bump(), x)", "m[1] = bump() + x", "x, y = bump(), y", "x += bump()", "xs[0] = bump()", "pair()", "*p = bump()"} {
		if _, err := s.eval(code); err != nil {
			t.Errorf("%q: %v", code, err)
		}
	}
}

// TestVarDeclarations: package-level variables of evaluated cells are
// initialized as compiled cells initialize them: in Go's order (by
// dependencies), then the ones without a value zeroed (also when they keep
// an earlier variable's storage); a cell whose initialization panics binds
// nothing.
func TestVarDeclarations(t *testing.T) {
	s := newSession(t)
	for _, c := range []struct{ code, want string }{
		{"var vi8 int8 = 127\nvi8++\nvi8", "-128"},
		{"var a = b + 1\nvar b = 2\na", "3"}, // b first: a depends on it
		{"var n, err = strconv.Atoi(\"5\")", ""},
		{"n", "5"},
		{"k := 7", ""},
		{"var k int\nk", "0"}, // k keeps its storage, zeroed
		{"xs := []int{1}", ""},
		{"var bad = xs[3]", "panic: runtime error: index out of range [3] with length 1"},
		{"var e error\ne == nil", "true"},
	} {
		got, err := s.eval(c.code)
		if err != nil {
			t.Errorf("%q: %v", c.code, err)
			continue
		}
		if got != c.want {
			t.Errorf("%q = %q, want %q", c.code, got, c.want)
		}
	}
	if s.chk.Lookup("bad") != nil {
		t.Error("bad is bound though its initialization panicked")
	}
}
