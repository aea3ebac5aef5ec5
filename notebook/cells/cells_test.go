package cells

import (
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

func kinds(src string) string {
	var out []string
	for _, u := range Split(src) {
		out = append(out, u.Kind.String()+":"+strings.TrimSpace(src[u.Start:u.End]))
	}
	return strings.Join(out, "|")
}

func TestSplitMixedOrder(t *testing.T) {
	src := "x := 1\nimport \"fmt\"\n// F doc\nfunc F() int { return x }\ntype T struct{ A int }\nfmt.Println(F()); y := 2\nfunc() { x++ }()\nfunc (t T) M() {}\nvar z = 3\npackage main"
	got := kinds(src)
	want := "stmt:x := 1|import:import \"fmt\"|decl:// F doc\nfunc F() int { return x }|decl:type T struct{ A int }|stmt:fmt.Println(F());|stmt:y := 2|stmt:func() { x++ }()|decl:func (t T) M() {}|decl:var z = 3|package:package main"
	if got != want {
		t.Errorf("Split:\n got %s\nwant %s", got, want)
	}
}

func TestSplitFuncLiteralWithResult(t *testing.T) {
	if got := kinds("func() int { return 1 }()"); got != "stmt:func() int { return 1 }()" {
		t.Errorf("got %s", got)
	}
	if got := kinds("func (r *R) Name() {}"); got != "decl:func (r *R) Name() {}" {
		t.Errorf("got %s", got)
	}
}

func TestBlankKeepsPositions(t *testing.T) {
	src := "a := 1\nfunc f() {}\nb := 2; c := 3"
	units := Split(src)
	stmts := Blank(src, units, func(u Unit) bool { return u.Kind == Stmt })
	if len(stmts) != len(src) || strings.Count(stmts, "\n") != strings.Count(src, "\n") {
		t.Fatalf("shape changed: %q", stmts)
	}
	if strings.Contains(stmts, "func") || !strings.Contains(stmts, "b := 2;") {
		t.Errorf("Blank: %q", stmts)
	}
	fset := token.NewFileSet()
	if _, err := parser.ParseFile(fset, "", "package p; func _() {"+stmts+"\n}", 0); err != nil {
		t.Errorf("blanked statements do not parse: %v", err)
	}
}

func TestSplitMagics(t *testing.T) {
	m, code := SplitMagics("%time\n!echo hi\nx := 1\n%notmagic")
	if len(m) != 2 || m[0].Text != "%time" || m[1].Line != 2 {
		t.Errorf("magics: %+v", m)
	}
	if code != "\n\nx := 1\n%notmagic" {
		t.Errorf("code: %q", code)
	}
}

func TestSplitMagicsContinuesShellLines(t *testing.T) {
	m, code := SplitMagics("!echo a \\\n  b \\\n  c\n!echo d\\\\\nx := 1")
	// An escaped backslash does not continue the line.
	if len(m) != 2 || m[0].Text != "!echo a \\\n  b \\\n  c" || m[0].Line != 1 || m[1].Text != "!echo d\\\\" || m[1].Line != 4 {
		t.Fatalf("magics: %+v", m)
	}
	if code != "\n\n\n\nx := 1" {
		t.Errorf("code: %q", code)
	}
	// Only shell lines continue.
	m, code = SplitMagics("%time \\\nx")
	if len(m) != 1 || m[0].Text != "%time \\" || code != "\nx" {
		t.Errorf("%%time line: %+v %q", m, code)
	}
}

func FuzzSplit(f *testing.F) {
	for _, s := range []string{"x := 1", "import \"fmt\"\nfunc f() {}\nf()", "type T struct{}\n", "func (", "\"unterminated", "{{{", "}}}", "a; b; ;;", "func() { }()", "/* c */ var x int // d\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		units := Split(src)
		prev := 0
		for _, u := range units {
			if u.Start < prev || u.End < u.Start || u.End > len(src) {
				t.Fatalf("bad unit %+v (prev end %d, len %d)", u, prev, len(src))
			}
			prev = u.End
		}
		b := Blank(src, units, func(u Unit) bool { return u.Kind == Stmt })
		if len(b) != len(src) {
			t.Fatalf("Blank changed length")
		}
		SplitMagics(src)
	})
}
