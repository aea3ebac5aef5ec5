package compiled

import "testing"

// A cell's generic struct, instantiated, is a type of the cell's package;
// a struct the cell spells that is such an instance stays the cell's own
// even where an earlier cell spelled it (Go's typeparam/dottype.go and
// typeswitch1.go after programs that spelled struct{ a, b int }).
func TestGenericStructInstancesAreTheCellsOwn(t *testing.T) {
	s := newSession(t)
	runCell(t, s, 1, "var old any = struct{ a, b int }{1, 2}\nfunc h[T any](x any) struct{ a, b T } {\n\treturn x.(struct{ a, b T })\n}\nh[int](struct{ a, b int }{3, 5}).a")
	if got := value(t, runCell(t, s, 2, "func h[T any](x any) struct{ a, b T } {\n\treturn x.(struct{ a, b T })\n}\nh[int](struct{ a, b int }{3, 5}).a")); got != "3" {
		t.Fatalf("h = %s", got)
	}
	src := `func kind[T any](i any) string {
	switch i.(type) {
	case T:
		return "T"
	case struct{ a, b T }:
		return "struct{T,T}"
	}
	return "other"
}
kind[int](struct{ a, b int }{1, 2})`
	if got := value(t, runCell(t, s, 3, src)); got != "struct{T,T}" {
		t.Fatalf("kind = %s", got)
	}
}
