package cells

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
)

func TestReceiverType(t *testing.T) {
	src := "package p\nfunc F() {}\nfunc (t *T) M() {}\nfunc (l List[E]) N() {}\nfunc (m Map[K, V]) O() {}\nfunc (v (V)) P() {}\n"
	f, err := parser.ParseFile(token.NewFileSet(), "", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"", "T", "List", "Map", "V"}
	for i, d := range f.Decls {
		if got := ReceiverType(d.(*ast.FuncDecl)); got != want[i] {
			t.Errorf("decl %d: ReceiverType = %q, want %q", i, got, want[i])
		}
	}
}
