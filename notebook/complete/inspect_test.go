package complete

import (
	"strings"
	"testing"
)

func TestInspect(t *testing.T) {
	tests := []struct {
		name    string
		code    string // "|" marks the cursor (end if absent)
		detail  int
		want    []string // substrings of text/plain; nil: not found
		notWant []string
	}{
		{"stdlib func", "strings.Split", 0, []string{"func Split(s, sep string) []string", "Split slices s"}, []string{"genSplit"}},
		{"stdlib func detail 1 has source", "strings.Split", 1, []string{"func Split(s, sep string) []string", "genSplit"}, nil},
		{"cursor inside name", "strings.Sp|lit(a, b)", 0, []string{"func Split("}, nil},
		{"cursor in call parens", "fmt.Println(", 0, []string{"func Println(a ...any) (n int, err error)", "Println formats"}, nil},
		{"cursor after arguments", "fmt.Println(\"a\", 1, ", 0, []string{"func Println("}, nil},
		{"cursor in nested literal", "fmt.Println([]int{1, |", 0, []string{"func Println("}, nil},
		{"stdlib type", "var b strings.Builder", 0, []string{"type Builder struct", "func (b *Builder) WriteString(s string) (int, error)"}, nil},
		{"stdlib method via type", "strings.Builder.WriteString", 0, []string{"func (b *Builder) WriteString(s string) (int, error)"}, nil},
		{"package", "fmt", 0, []string{"package fmt", "func Println("}, nil},
		{"scope func", "greet", 0, []string{"func greet(name string) string", "greet says hello."}, []string{"return"}},
		{"scope func detail 1", "greet(|", 1, []string{"func greet(name string) string", "return \"hi \" + name"}, nil},
		{"scope var without type", "origin", 0, []string{"var origin Point"}, nil},
		{"scope var method", "origin.Norm", 0, []string{"func (Point).Norm() int", "Norm is the squared length."}, nil},
		{"scope stdlib-typed var method", "sb.WriteString", 0, []string{"func (*strings.Builder).WriteString(s string) (int, error)", "WriteString appends"}, nil},
		{"cell func", "// add adds.\nfunc add(a, b int) int { return a + b }\nadd|(1, 2)", 0, []string{"func add(a, b int) int", "add adds."}, []string{"return a + b"}},
		{"cell func detail 1", "// add adds.\nfunc add(a, b int) int { return a + b }\nx := add(", 1, []string{"func add(a, b int) int", "return a + b"}, nil},
		{"cell type", "// T is a thing.\ntype T struct{ A int }\nvar t T|", 0, []string{"type T struct", "T is a thing."}, nil},
		{"cell var", "r := strings.NewReader(\"x\")\nr|", 0, []string{"var r *strings.Reader"}, nil},
		{"cursor after a call is on nothing", "r := strings.NewReader(\"x\")\nr.Len()", 0, nil, nil},
		{"cell var method at name", "r := strings.NewReader(\"x\")\nr.Le|n()", 0, []string{"func (*strings.Reader).Len() int", "Len returns"}, nil},
		{"builtin", "x := append|", 0, []string{"func append(slice []Type, elems ...Type) []Type"}, nil},
		{"builtin min", "min(|", 0, []string{"func min["}, nil},
		{"non-ASCII before", "s := \"ü ✓\"; x := strings.Fields|(s)", 0, []string{"func Fields(s string) []string"}, nil},
		{"unknown", "zzz", 0, nil, nil},
		{"unknown member", "strings.Nope", 0, nil, nil},
		{"empty", "", 0, nil, nil},
		{"blank", "x := 1 |  ", 0, nil, nil},
		{"in comment", "// strings.Split(|", 0, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, cursor := cursorAt(tt.code)
			got := Inspect(code, cursor, tt.detail, testScope)
			if got.Found != (tt.want != nil) {
				t.Fatalf("Found = %v, want %v (data %v)", got.Found, tt.want != nil, got.Data)
			}
			if !got.Found {
				return
			}
			text, _ := got.Data["text/plain"].(string)
			md, _ := got.Data["text/markdown"].(string)
			if md == "" {
				t.Errorf("no text/markdown")
			}
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("text lacks %q:\n%s", w, text)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(text, w) {
					t.Errorf("text holds %q:\n%s", w, text)
				}
			}
		})
	}
}

func TestHelp(t *testing.T) {
	tests := []struct {
		name   string
		detail int
		want   []string // nil: not found
	}{
		{"strings.Split", 0, []string{"func Split(s, sep string) []string", "Split slices s"}},
		{"strings.Split?", 0, []string{"func Split(s, sep string) []string"}},
		{"strings.Split??", 0, []string{"genSplit"}},
		{"fmt", 0, []string{"package fmt // import \"fmt\"", "Package fmt implements", "func Println(a ...any) (n int, err error)", "type Stringer interface"}},
		{"net/http", 0, []string{"package http // import \"net/http\"", "func Get(url string) (resp *Response, err error)"}},
		{"net/nope", 0, nil},
		{"http", 0, []string{"package http // import \"net/http\"", "func Get(url string) (resp *Response, err error)"}},
		{"strings.Builder.WriteString", 0, []string{"WriteString appends"}},
		{"greet", 1, []string{"func greet(name string) string", "greet says hello.", "return \"hi \""}},
		{"Point", 0, []string{"type Point struct{ X, Y int }"}},
		{"Point.Norm", 1, []string{"func (Point).Norm() int", "Norm is the squared length.", "return p.X*p.X"}},
		{"len", 0, []string{"func len(v Type) int"}},
		{"nope", 0, nil},
		{"strings.Nope", 0, nil},
		{"", 0, nil},
	}
	for _, tt := range tests {
		text, ok := Help(tt.name, tt.detail, testScope)
		if ok != (tt.want != nil) {
			t.Errorf("Help(%q) found = %v, want %v:\n%s", tt.name, ok, tt.want != nil, text)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(text, w) {
				t.Errorf("Help(%q) lacks %q:\n%s", tt.name, w, text)
			}
		}
	}
}
