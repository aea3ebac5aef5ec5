package notebook

import (
	"strings"
	"testing"
)

// TestCommaOKOutsideFunctions covers the comma-ok forms yaegi v0.16.1 fails
// on in a cell's own statements, which the engine rewrites.
func TestCommaOKOutsideFunctions(t *testing.T) {
	e := newEngine(t)
	mustRun(t, e, `import "fmt"
var x any = 5
var y any = "s"
m := map[string]int{"a": 1}`)
	for _, tc := range []struct{ code, want string }{
		{"v, ok := x.(int)\nfmt.Println(v, ok)", "5 true"},
		{"v2, ok2 := x.(string)\nfmt.Println(v2 == \"\", ok2)", "true false"},
		{"if s, ok := y.(string); ok { fmt.Println(\"str\", s) }", "str s"},
		{"w, found := m[\"zz\"]\nfmt.Println(w, found)", "0 false"},
		{"for i := 0; i < 2; i++ { if q, ok := m[\"a\"]; ok { fmt.Print(i, q, \";\") } }", "0 1;1 1;"},
		{"switch t := y.(type) {\ncase string:\n\tfmt.Println(\"switch\", t)\n}", "switch s"},
		{"func lookup(k string) (int, bool) { v, ok := m[k]; return v, ok }\nfmt.Println(lookup(\"a\"))", "1 true"},
	} {
		_, io := mustRun(t, e, tc.code)
		if got := io.text("stdout"); !strings.Contains(got, tc.want) {
			t.Errorf("%q printed %q, want %q", tc.code, got, tc.want)
		}
	}
	rep, _ := mustRun(t, e, "ch := make(chan int, 1)\nch <- 1\nr, okr := <-ch\nfmt.Sprint(r, okr)")
	if got := resultText(rep); got != `"1 true"` {
		t.Fatalf("receive: %q", got)
	}
}
