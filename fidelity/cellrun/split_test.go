package cellrun

import (
	"reflect"
	"strings"
	"testing"
)

func TestSplitCellsOrdersByUse(t *testing.T) {
	src := `// Program comment.
package main

import "fmt"

func main() {
	fmt.Println(total, shape(sq{2}).area())
}

var total = sum(1, 2)

func sum(xs ...int) int { return add(xs) }

func add(xs []int) int {
	if len(xs) == 0 {
		return 0
	}
	return xs[0] + sum(xs[1:]...)
}

type shape interface{ area() int }

func (s sq) area() int { return s.n * s.n }

// sq is a square.
type sq struct{ n int }

func init() { total++ }

func init() { total *= 2 }
`
	got := SplitCells([]byte(src))
	first := func(s string) string { return strings.SplitN(s, "\n", 2)[0] }
	var heads []string
	for _, c := range got {
		heads = append(heads, first(c))
	}
	want := []string{
		`import "fmt"`,
		`func sum(xs ...int) int { return add(xs) }`, // sum and add use each other: one cell
		`var total = sum(1, 2)`,
		`type shape interface{ area() int }`,
		`func (s sq) area() int { return s.n * s.n }`, // a type shares its methods' cell, doc comment kept
		`func init() { total++ }`,
		`func init() { total *= 2 }`,
		`func main() {`,
	}
	if !reflect.DeepEqual(heads, want) {
		t.Fatalf("cells start\n%q\nwant\n%q", heads, want)
	}
	if !strings.Contains(got[1], "func add(") || !strings.Contains(got[4], "// sq is a square.\ntype sq struct") {
		t.Fatalf("cells: %q", got)
	}
}

func TestSplitCellsKeepsAnUnparsableProgramWhole(t *testing.T) {
	src := "package main\nfunc main() {"
	if got := SplitCells([]byte(src)); len(got) != 1 || got[0] != src {
		t.Fatalf("got %q", got)
	}
}

// Variables are initialized as Go initializes a package: the earliest in
// source order whose dependencies (through functions too) are initialized;
// a function comes just before the first variable that needs it. The
// example is the Go specification's (d, b, c, a), then test/fixedbugs/
// issue66585.go's (a before b, although b depends only on x).
func TestSplitCellsInitializesVariablesInGoOrder(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want []string
	}{
		{`package main
var a = c + b
var b = f()
var c = f()
var d = 3
func f() int { d++; return d }
func main() {}
`, []string{"var d = 3", "func f() int { d++; return d }", "var b = f()", "var c = f()", "var a = c + b", "func main() {}"}},
		{`package main
var x = 0
var a = foo()
var b = x
func foo() int { x++; return x }
type unused struct{}
func main() {}
`, []string{"var x = 0", "func foo() int { x++; return x }", "var a = foo()", "var b = x", "type unused struct{}", "func main() {}"}},
	} {
		if got := SplitCells([]byte(tc.src)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("cells\n%q\nwant\n%q", got, tc.want)
		}
	}
}
