package complete

import (
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/frontend"
)

// fakeScope is a Scope for tests.
type fakeScope struct {
	decls   []Decl
	imports map[string]string
}

func (f fakeScope) Declarations() []Decl       { return f.decls }
func (f fakeScope) Imports() map[string]string { return f.imports }

var testScope = fakeScope{
	decls: []Decl{
		{Name: "greet", Kind: "func", Signature: "func greet(name string) string", Doc: "greet says hello.",
			Source: "// greet says hello.\nfunc greet(name string) string { return \"hi \" + name }"},
		{Name: "Point", Kind: "type", Signature: "type Point struct{ X, Y int }", Source: "type Point struct{ X, Y int }"},
		{Name: "Point.Norm", Kind: "func", Doc: "Norm is the squared length.", Signature: "func (p Point) Norm() int", Source: "func (p Point) Norm() int { return p.X*p.X + p.Y*p.Y }"},
		{Name: "origin", Kind: "var", Source: "origin := Point{1, 2}"},
		{Name: "sb", Kind: "var", Signature: "var sb strings.Builder", Source: "var sb strings.Builder"},
		{Name: "limit", Kind: "const", Signature: "const limit = 10", Source: "const limit = 10"},
	},
	imports: map[string]string{"strings": "strings", "fmt": "fmt"},
}

// cursorAt returns code without the "|" marker and the marker's position in
// code points.
func cursorAt(s string) (string, int) {
	i := strings.Index(s, "|")
	if i < 0 {
		return s, len([]rune(s))
	}
	return s[:i] + s[i+1:], len([]rune(s[:i]))
}

func TestComplete(t *testing.T) {
	tests := []struct {
		name       string
		code       string // "|" marks the cursor (end if absent)
		want       []string
		notWant    []string
		start, end int // expected cursor span; -1 for "don't check"
	}{
		{"pkg member", "strings.Sp", []string{"Split", "SplitN", "SplitAfter"}, []string{"Join", "strings"}, 8, 10},
		{"fmt.Pri", "fmt.Pri", []string{"Print", "Printf", "Println"}, []string{"Sprint"}, 4, 7},
		{"ToUpp", "strings.ToUpp", []string{"ToUpper", "ToUpperSpecial"}, nil, 8, 13},
		{"Sprintl", "fmt.Sprintl", []string{"Sprintln"}, nil, 4, 11},
		{"member after dot", "x := 1\nstrings.", []string{"Builder", "Contains", "Split"}, nil, 15, 15},
		{"aliased import in the cell", "import str \"strings\"\nstr.Sp", []string{"Split"}, nil, 25, 27},
		{"not imported but importable", "os.Gete", []string{"Getenv"}, nil, 3, 7},
		{"the toolchain's newer stdlib names (cells are compiled)", "strings.Line", []string{"Lines"}, nil, 8, 12},
		{"generic stdlib func", "import \"slices\"\nslices.Cont", []string{"Contains", "ContainsFunc"}, nil, 23, 27},
		{"package name", "fm", []string{"fmt"}, []string{"for"}, 0, 2},
		{"keywords and builtins", "f", []string{"fmt", "for", "func", "false", "float64"}, []string{"go"}, 0, 1},
		{"new builtins", "x := m", []string{"min", "max", "make", "math"}, nil, 5, 6},
		{"clear", "cle", []string{"clear"}, nil, 0, 3},
		{"case-insensitive after exact", "strings.sp", []string{"Split"}, nil, 8, 10},
		{"scope func", "gr", []string{"greet"}, nil, 0, 2},
		{"scope type and var", "x := P", []string{"Point"}, []string{"Point.Norm"}, 5, 6},
		{"scope var", "fmt.Println(ori", []string{"origin"}, nil, 12, 15},
		{"cell func", "func helper() int { return 1 }\nhel", []string{"helper"}, nil, 31, 34},
		{"cell var", "count := 3\nfor i := 0; i < cou", []string{"count"}, nil, 27, 30},
		{"cell param", "func f(alpha int) {\n\tal", []string{"alpha"}, nil, 21, 23},
		{"struct fields of scope var", "origin.", []string{"X", "Y", "Norm"}, []string{"x"}, 7, 7},
		{"method of stdlib type", "sb.Wr", []string{"WriteString", "WriteByte", "WriteRune"}, []string{"Len"}, 3, 5},
		{"cell struct", "type T struct{ Name string; age int }\nfunc (T) Hello() {}\nv := T{}\nv.", []string{"Name", "age", "Hello"}, nil, 69, 69},
		{"pointer from stdlib func", "r := strings.NewReader(\"x\")\nr.Re", []string{"Read", "ReadByte", "ReadRune"}, nil, 30, 32},
		{"inside a call, broken line", "for _, p := range []Point{origin} {\n\tfmt.Println(p.", []string{"X", "Norm"}, nil, 51, 51},
		{"var of a package the cell did not import", "var c http.Client\nc.D", []string{"Do"}, []string{"Get"}, 20, 21},
		{"in if header", "if origin.", []string{"X", "Y"}, nil, 10, 10},
		{"method expression on stdlib type", "strings.Builder.Wr", []string{"WriteString"}, nil, 16, 18},
		{"mid-word replaces the whole word", "strings.Sp|xx", []string{"Split"}, nil, 8, 12},
		{"non-ASCII before cursor", "s := \"héllo wörld ✓\"\nstrings.Sp", []string{"Split"}, nil, 29, 31},
		{"non-ASCII identifier", "ünïcode := 1\nx := ün", []string{"ünïcode"}, nil, 18, 20},
		{"non-ASCII after cursor", "strings.Sp| // ✓ é", []string{"Split"}, nil, 8, 10},
		{"import path", "import \"net/ht", []string{"net/http", "net/http/httptest"}, []string{"fmt"}, 8, 14},
		{"import group path", "import (\n\t\"fmt\"\n\t\"encoding/js", []string{"encoding/json"}, nil, 18, 29},
		{"no completion in strings", "fmt.Println(\"strings.Sp", nil, []string{"Split"}, -1, -1},
		{"no completion in comments", "// strings.Sp", nil, []string{"Split"}, -1, -1},
		{"no completion in numbers", "x := 12", nil, []string{"12"}, -1, -1},
		{"unknown operand", "nothing.Sp", nil, []string{"Split"}, -1, -1},
		{"shadowed package name", "strings := []string{}\nstrings.Sp", nil, []string{"Split"}, -1, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, cursor := cursorAt(tt.code)
			got := Complete(code, cursor, testScope)
			for _, w := range tt.want {
				if !slices.Contains(got.Matches, w) {
					t.Errorf("matches %q lack %q", got.Matches, w)
				}
			}
			for _, w := range tt.notWant {
				if slices.Contains(got.Matches, w) {
					t.Errorf("matches %q hold %q", got.Matches, w)
				}
			}
			if tt.start >= 0 && (got.CursorStart != tt.start || got.CursorEnd != tt.end) {
				t.Errorf("span = [%d, %d), want [%d, %d)", got.CursorStart, got.CursorEnd, tt.start, tt.end)
			}
			if tt.want == nil && len(got.Matches) != 0 && len(tt.notWant) == 0 {
				t.Errorf("matches = %q, want none", got.Matches)
			}
		})
	}
}

func TestCompleteSpanReplaces(t *testing.T) {
	// Applying a match as the frontend does must give the intended text.
	code := "s := \"ü\"; strings.Spl"
	got := Complete(code, len([]rune(code)), nil)
	r := []rune(code)
	out := string(r[:got.CursorStart]) + "SplitN" + string(r[got.CursorEnd:])
	if want := "s := \"ü\"; strings.SplitN"; out != want || !slices.Contains(got.Matches, "SplitN") {
		t.Fatalf("applied %q → %q (matches %q)", "SplitN", out, got.Matches)
	}
}

func TestCompleteMetadata(t *testing.T) {
	got := Complete("strings.Spl", 11, nil)
	meta, ok := got.Metadata["_jupyter_types_experimental"].([]any)
	if !ok || len(meta) != len(got.Matches) || len(meta) == 0 {
		t.Fatalf("metadata = %#v for matches %q", got.Metadata, got.Matches)
	}
	for _, m := range meta {
		e := m.(map[string]any)
		if e["text"] == "Split" {
			if e["type"] != "function" || e["signature"] != "func Split(s, sep string) []string" || e["start"] != 8 || e["end"] != 11 {
				t.Errorf("Split metadata = %v", e)
			}
			return
		}
	}
	t.Errorf("no metadata for Split in %v", meta)
}

func TestCompleteNilScopeAndBadCursor(t *testing.T) {
	var nilScope *fakeScope
	for _, c := range []int{-5, 0, 3, 100} {
		got := Complete("fmt.Pr", c, nilScope)
		if got.CursorStart < 0 || got.CursorEnd > 6 || got.CursorStart > got.CursorEnd {
			t.Errorf("cursor %d: span [%d, %d)", c, got.CursorStart, got.CursorEnd)
		}
		if got.Matches == nil {
			t.Errorf("cursor %d: nil matches", c)
		}
	}
	if got := Complete("fmt.Pr", 100, nilScope); !slices.Contains(got.Matches, "Println") {
		t.Errorf("cursor past the end: %q", got.Matches)
	}
}

func TestIsComplete(t *testing.T) {
	tests := []struct {
		code   string
		want   frontend.Completeness
		indent string
	}{
		{"", frontend.Complete, ""},
		{"  \n\n", frontend.Complete, ""},
		{`fmt.Println("hello")`, frontend.Complete, ""},
		{"x := 1", frontend.Complete, ""},
		{"6*7", frontend.Complete, ""},
		{"func f() int { return 1 }", frontend.Complete, ""},
		{"type point struct{ x, y int }", frontend.Complete, ""},
		{"import \"fmt\"\nfunc f() {}\nx := 1\nfmt.Println(x)\n", frontend.Complete, ""},
		{"package main\nfunc main() {}", frontend.Complete, ""},
		{"func (p point) norm() int { return p.x }", frontend.Complete, ""},
		{"func() { fmt.Println(1) }()", frontend.Complete, ""},
		{"%who", frontend.Complete, ""},
		{"%%bash\nls {", frontend.Complete, ""},
		{"!ls -l\nx := 1", frontend.Complete, ""},
		{"strings.Split?", frontend.Complete, ""},
		{"?fmt", frontend.Complete, ""},
		{"// just a comment", frontend.Complete, ""},
		{"s := `raw\nstring`", frontend.Complete, ""},

		{`fmt.Println("hello"`, frontend.Incomplete, "    "},
		{"for i := 0; i < 3; i++ {", frontend.Incomplete, "    "},
		{"x := []int{1,", frontend.Incomplete, "    "},
		{"func f() {", frontend.Incomplete, "    "},
		{"func f() {\n\tif x {", frontend.Incomplete, "\t\t"},
		{"func f() {\n    for {\n        g(func() {", frontend.Incomplete, "            "},
		{"x := map[string]int{\n    \"a\": 1,\n", frontend.Incomplete, "    "},
		{`"unterminated`, frontend.Incomplete, ""},
		{"s := `raw\n", frontend.Incomplete, ""},
		{"/* comment", frontend.Incomplete, ""},
		{"x :=", frontend.Incomplete, "    "},
		{"x := 1 +", frontend.Incomplete, "    "},
		{"y := a &&", frontend.Incomplete, "    "},
		{"if x", frontend.Incomplete, ""},
		{"func f()", frontend.Incomplete, ""},
		{"var", frontend.Incomplete, ""},
		{"x := s.", frontend.Incomplete, "    "},

		{"x := )", frontend.Invalid, ""},
		{")", frontend.Invalid, ""},
		{"}", frontend.Invalid, ""},
		{"func func", frontend.Invalid, ""},
		{"x := [1, 2)", frontend.Invalid, ""},
		{"x := 1 2", frontend.Invalid, ""},
		{"x := @", frontend.Invalid, ""},
		{"s := \"broken\nx := 1", frontend.Invalid, ""},
		{"if x {\n}\n}", frontend.Invalid, ""},
	}
	for _, tt := range tests {
		got, indent := IsComplete(tt.code)
		if got != tt.want || indent != tt.indent {
			t.Errorf("IsComplete(%q) = %q, %q; want %q, %q", tt.code, got, indent, tt.want, tt.indent)
		}
	}
}

// panicScope panics in every method.
type panicScope struct{}

func (panicScope) Declarations() []Decl       { panic("boom") }
func (panicScope) Imports() map[string]string { panic("boom") }

func TestPanickingScope(t *testing.T) {
	if got := Complete("strings.Sp", 10, panicScope{}); !slices.Contains(got.Matches, "Split") {
		t.Errorf("Complete: %q", got.Matches)
	}
	if got := Inspect("strings.Split", 13, 0, panicScope{}); !got.Found {
		t.Errorf("Inspect: not found")
	}
	if _, ok := Help("strings.Split", 0, panicScope{}); !ok {
		t.Errorf("Help: not found")
	}
}

func TestConcurrent(t *testing.T) {
	codes := []string{"strings.Sp", "origin.", "r := strings.NewReader(\"\")\nr.Re", "fmt.Pri", "time.Du", "x := json.Mar"}
	done := make(chan bool)
	for _, c := range codes {
		go func() {
			defer func() { done <- true }()
			for range 3 {
				if got := Complete(c, len(c), testScope); len(got.Matches) == 0 {
					t.Errorf("%q: no matches", c)
				}
				Inspect(c, len(c), 1, testScope)
				IsComplete(c)
			}
		}()
	}
	for range codes {
		<-done
	}
}
