package check

import (
	"errors"
	"go/ast"
	"go/importer"
	"go/token"
	"go/types"
	"slices"
	"strings"
	"sync"
	"testing"
)

var (
	impOnce sync.Once
	impFset *token.FileSet
	imp     types.Importer
)

// newSession returns a session importing from the installed toolchain's
// export data (one importer for the whole test binary: it caches).
func newSession(t *testing.T) *Session {
	t.Helper()
	impOnce.Do(func() {
		impFset = token.NewFileSet()
		imp = importer.ForCompiler(impFset, "gc", nil)
	})
	return NewSession(Config{
		Importer:  imp,
		FileSet:   impFset,
		GoVersion: "go1.26",
		AutoImport: func(name string) string {
			switch name {
			case "strings", "fmt", "sort", "os":
				return name
			}
			return ""
		},
	})
}

// run checks and commits each cell; it fails the test on an error.
func run(t *testing.T, s *Session, n int, src string) *Cell {
	t.Helper()
	c, err := s.Check(src, n)
	if err != nil {
		var ce *Error
		if errors.As(err, &ce) {
			t.Fatalf("cell[%d] rejected:\n%s", n, strings.Join(ce.Lines(s.Source), "\n"))
		}
		t.Fatalf("cell[%d]: %v", n, err)
	}
	s.Commit(c, nil)
	return c
}

// reject checks a cell that must fail with a message containing want.
func reject(t *testing.T, s *Session, n int, src, want string) *Error {
	t.Helper()
	_, err := s.Check(src, n)
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("cell[%d] %q: want an error containing %q, got %v", n, src, want, err)
	}
	if !strings.Contains(ce.Error(), want) {
		t.Fatalf("cell[%d] %q: error %q does not contain %q (all: %v)", n, src, ce.Error(), want, ce.Diags)
	}
	return ce
}

func varType(t *testing.T, s *Session, name string) string {
	t.Helper()
	e := s.Lookup(name)
	if e == nil {
		t.Fatalf("%s is not bound", name)
	}
	return types.TypeString(e.Obj.Type(), func(p *types.Package) string { return p.Name() })
}

func TestGoMessages(t *testing.T) {
	s := newSession(t)
	reject(t, s, 1, "y := nosuchFunc(1)", "cell[1]:1:6: undefined: nosuchFunc")
	run(t, s, 2, "func two() (int, error) { return 1, nil }")
	reject(t, s, 3, "v := two()", "cell[3]:1:6: assignment mismatch: 1 variable but two returns 2 values")
	run(t, s, 4, "x := 1")
	reject(t, s, 5, `x = "s"`, `cannot use "s" (untyped string constant) as int value in assignment`)
	reject(t, s, 6, "func f() {\n\ty := 1\n}", "cell[6]:2:2: declared and not used: y")
	reject(t, s, 7, "x == 1\nx", "is not used")
	// A failed cell changes nothing.
	if s.Lookup("y") != nil || s.Lookup("v") != nil {
		t.Fatal("a rejected cell bound names")
	}
}

func TestNotebookRules(t *testing.T) {
	s := newSession(t)
	// Unused imports and top-level variables are fine; the trailing
	// expression is the result.
	c := run(t, s, 1, "import \"os\"\nunused := 3\nunused == 3")
	if c.Trailing == nil {
		t.Fatal("no trailing expression")
	}
	if tv := c.Info.Types[c.Trailing.X]; tv.Type == nil || tv.Type.String() != "untyped bool" && tv.Type.String() != "bool" {
		t.Fatalf("trailing type %v", tv.Type)
	}
	// Redeclaring a name in a later cell.
	run(t, s, 2, `unused := "now a string"`)
	if got := varType(t, s, "unused"); got != "string" {
		t.Fatalf("unused is %s", got)
	}
	run(t, s, 3, "func unused() int { return 1 }\nunused()")
	if e := s.Lookup("unused"); e.Kind != FuncEntry {
		t.Fatalf("unused is a %s", e.Kind)
	}
	// The same name twice in one cell is Go's error.
	reject(t, s, 4, "a := 1\na := 2", "no new variables on left side of :=")
}

func TestHoistingAndShadowing(t *testing.T) {
	s := newSession(t)
	run(t, s, 1, "x := 5\nf := func() int { return x }")
	// x := x + 1 reads the earlier x.
	c := run(t, s, 2, "x := x + 1")
	if len(c.Hoisted) != 1 || c.Hoisted[0].Name != "x" {
		t.Fatalf("hoisted %v", c.Hoisted)
	}
	run(t, s, 3, `x := "str"`)
	run(t, s, 4, "y := f() + 1") // f still reads the int x it captured
	// A declaration sees the variables the cell's statements define.
	run(t, s, 5, "n := 3\nfunc triple() int { return n * 3 }\ntriple()")
	if got := varType(t, s, "n"); got != "int" {
		t.Fatalf("n is %s", got)
	}
	// var after a statement runs with the statements.
	run(t, s, 6, "k := 2\nvar m = k * 2\nconst c = 7\nm + c")
	if got := varType(t, s, "m"); got != "int" {
		t.Fatalf("m is %s", got)
	}
	if e := s.Lookup("c"); e == nil || e.Kind != ConstEntry {
		t.Fatalf("c: %v", e)
	}
	// Types from packages the cell did not import are named through hidden
	// imports.
	run(t, s, 7, "import \"net/url\"\nu, _ := url.Parse(\"http://x\")\nq := u.User")
	if got := varType(t, s, "q"); got != "*url.Userinfo" {
		t.Fatalf("q is %s", got)
	}
	run(t, s, 8, "w := struct{ a int; b []string }{}\nw.a")
}

func TestMethodsOnEarlierTypes(t *testing.T) {
	s := newSession(t)
	run(t, s, 1, "type point struct{ x, y int }\nfunc (p point) sum() int { return p.x + p.y }")
	// Unexported fields of an earlier cell's type: one package.
	c := run(t, s, 2, "func norm(p point) int { return p.x*p.x + p.y*p.y }")
	if len(c.Rehomed) != 0 {
		t.Fatalf("norm re-homed %v", c.Rehomed)
	}
	// A method added later recompiles the type with all its methods, and
	// the functions that use the type.
	c = run(t, s, 3, "func (p point) String() string { return \"P\" }")
	got := map[string]bool{}
	for _, r := range c.Rehomed {
		got[r.Old.Name] = true
	}
	for _, want := range []string{"point", "sum", "norm"} {
		if !got[want] {
			t.Fatalf("re-homed %v, want %s among them", got, want)
		}
	}
	run(t, s, 4, "p := point{1, 2}\n_ = p.sum() + norm(p)\np.String()")
	// Interfaces with unexported methods across cells.
	run(t, s, 5, "type shape interface{ area() float64 }")
	run(t, s, 6, "type sq struct{ s float64 }\nfunc (q sq) area() float64 { return q.s * q.s }")
	run(t, s, 7, "var sh shape = sq{2}\nsh.area()")
}

func TestGenericsAcrossCells(t *testing.T) {
	s := newSession(t)
	run(t, s, 1, "func Map[T, U any](xs []T, f func(T) U) []U {\n\tvar out []U\n\tfor _, x := range xs {\n\t\tout = append(out, f(x))\n\t}\n\treturn out\n}")
	run(t, s, 2, "type list[T any] struct{ items []T }\nfunc (l *list[T]) push(v T) { l.items = append(l.items, v) }")
	c := run(t, s, 3, "var l list[string]\nl.push(\"a\")\nm := Map([]int{1, 2}, func(i int) string { return \"x\" })\nm")
	if len(c.Hoisted) != 1 || c.Hoisted[0].Name != "m" {
		t.Fatalf("hoisted %v", c.Hoisted)
	}
	if got := varType(t, s, "l"); got != "main.list[string]" {
		t.Fatalf("l is %s", got)
	}
}

// A type of an earlier cell as a type argument inside a function: go/types'
// instantiation cycle check walks from the type's object up to the package
// scope (it crashed the check when earlier objects kept their old scope).
func TestEarlierTypeAsTypeArgument(t *testing.T) {
	s := newSession(t)
	run(t, s, 1, "type Number interface{ ~int | ~float64 }\nfunc Sum[N Number](xs ...N) N {\n\tvar s N\n\tfor _, x := range xs {\n\t\ts += x\n\t}\n\treturn s\n}")
	run(t, s, 2, "type meters float64")
	run(t, s, 3, "func total() meters { return Sum[meters](1.25, 2) }")
	run(t, s, 4, "type meters int") // redefined: the old meters is no longer bound
	run(t, s, 5, "func again() float64 { return float64(total()) + float64(Sum[meters](1, 2)) }")
	// `type A B` with B of an earlier cell: go/types' cycle check of type
	// names followed B out of the check (and crashed).
	run(t, s, 6, "type length meters\ntype size = meters")
	reject(t, s, 7, "type a b\ntype b a", "invalid recursive type")
}

func TestRedefinitionOfDependencies(t *testing.T) {
	s := newSession(t)
	run(t, s, 1, "func g() int { return 1 }\nfunc h() int { return g() + 1 }")
	// Same signature: compatible, nothing recompiled.
	c := run(t, s, 2, "func g() int { return 2 }")
	if len(c.Rehomed) != 0 {
		t.Fatalf("re-homed %v", c.Rehomed)
	}
	// Another signature: h is recompiled; it no longer compiles, so it
	// keeps its old binding with a warning.
	old := s.Lookup("h")
	c = run(t, s, 3, "func g() string { return \"a\" }")
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "func h (cell[1]) keeps its previous definition") {
		t.Fatalf("warnings %q", c.Warnings)
	}
	if s.Lookup("h") != old {
		t.Fatal("h was rebound")
	}
	// A changed constant recompiles its users.
	run(t, s, 4, "const size = 3\nfunc area() int { return size * size }")
	c = run(t, s, 5, "const size = 4")
	if len(c.Rehomed) != 1 || c.Rehomed[0].Old.Name != "area" {
		t.Fatalf("re-homed %v", c.Rehomed)
	}
	// A redefined type recompiles the functions that use it.
	run(t, s, 6, "type celsius float64\nfunc warm(c celsius) bool { return c > 20 }")
	c = run(t, s, 7, "type celsius int")
	if len(c.Rehomed) != 1 || c.Rehomed[0].Old.Name != "warm" {
		t.Fatalf("re-homed %v", c.Rehomed)
	}
	run(t, s, 8, "warm(celsius(3))")
}

func TestValuesOfOldTypesKeepThem(t *testing.T) {
	s := newSession(t)
	run(t, s, 1, "type T struct{ a int }\nv := T{1}")
	run(t, s, 2, "type T struct{ a, b int }")
	// v keeps the old T; spelling its type needs a stand-in.
	run(t, s, 3, "w := v\nw.a")
	reject(t, s, 4, "var z T = v", "cannot use v (variable of struct type")
}

func TestAutoImportAndImportRebinding(t *testing.T) {
	s := newSession(t)
	c := run(t, s, 1, `strings.ToUpper("a")`)
	if len(c.AutoImports) != 1 || c.AutoImports[0] != "strings" {
		t.Fatalf("auto imports %v", c.AutoImports)
	}
	run(t, s, 2, "import \"math/rand\"\nr := rand.Intn(3)")
	run(t, s, 3, "import \"crypto/rand\"\nb := make([]byte, 2)\nrand.Read(b)")
	if s.Imports()["rand"] != "crypto/rand" {
		t.Fatalf("imports %v", s.Imports())
	}
	reject(t, s, 4, `import "no/such/pkg"`, "could not import no/such/pkg")
}

// TestDotImportAgain: a dot import repeated in a later cell (GoMLX's
// tutorial does it) is the newest import of the same package, not a
// second declaration of each of its names.
func TestDotImportAgain(t *testing.T) {
	s := newSession(t)
	run(t, s, 1, "import . \"strings\"\nfunc up(s string) string { return ToUpper(s) }")
	run(t, s, 2, "import (\n\t\"fmt\"\n\t. \"strings\"\n)\nx := fmt.Sprint(ToLower(up(\"A\")))")
	run(t, s, 3, "import . \"strings\"\ny := Repeat(\"a\", 2)")
	n := 0
	for _, im := range s.ImportList() {
		if im.Name == "." {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d dot imports of strings: %v", n, s.ImportList())
	}
}

// TestRedeclaringMainWithAVariable: a cell redeclaring a variable that an
// earlier func main uses, and declaring main itself, replaces that main
// (GoNB's %% cells do) instead of compiling the old one again beside it.
func TestRedeclaringMainWithAVariable(t *testing.T) {
	s := newSession(t)
	run(t, s, 1, "var c = 1\nfunc main() { _ = c }")
	run(t, s, 2, "var c = float32(1.5)\nfunc main() { _ = c + 1 }")
}

// TestResolveAmbiguous: a resolver's error replaces Go's "undefined".
func TestResolveAmbiguous(t *testing.T) {
	s := newSession(t)
	s.conf.Resolve = func(name, src string) (string, error) {
		if name == "context" {
			return "", errors.New("several packages are named context")
		}
		return s.conf.AutoImport(name), nil
	}
	reject(t, s, 1, "var c context.Context", "several packages are named context")
	run(t, s, 2, `strings.ToUpper("a")`)
}

func TestGo126Constructs(t *testing.T) {
	s := newSession(t)
	run(t, s, 1, "n := 0\nfor range 3 {\n\tfunc() { n++ }()\n}\np := new(42)\n*p + n")
	if got := varType(t, s, "p"); got != "*int" {
		t.Fatalf("p is %s", got)
	}
	run(t, s, 2, "import \"slices\"\ns := []int{3, 1, 2}\nslices.Sort(s)\nslices.Max(s)")
	run(t, s, 3, "import \"iter\"\nfunc count(n int) iter.Seq[int] {\n\treturn func(yield func(int) bool) {\n\t\tfor i := range n {\n\t\t\tif !yield(i) {\n\t\t\t\treturn\n\t\t\t}\n\t\t}\n\t}\n}\nfor i := range count(3) {\n\t_ = i\n}")
}

func TestErrorLinesHaveCarets(t *testing.T) {
	s := newSession(t)
	ce := reject(t, s, 1, "a := 1\nb := a +\"x\"", "cell[1]:2:6:")
	lines := ce.Lines(func(int) string { return "a := 1\nb := a +\"x\"" })
	if len(lines) < 3 || lines[1] != "    b := a +\"x\"" || lines[2] != "         ^" {
		t.Fatalf("lines %q", lines)
	}
	reject(t, s, 2, "func f( {", "cell[2]:1:")
	reject(t, s, 3, "_gxx := 1", "reserved by goaccel")
}

func TestRerun(t *testing.T) {
	s := newSession(t)
	src := "type point struct{ x int }\nfunc mk() point { return point{1} }\np := mk()"
	run(t, s, 1, src)
	if s.Rerun(src) == nil {
		t.Fatal("an unchanged cell cannot run again")
	}
	run(t, s, 2, "func mk() point { return point{2} }")
	if s.Rerun(src) != nil {
		t.Fatal("a cell whose bindings changed ran again")
	}
}

// TestEmbedIsRefused: //go:embed would silently embed nothing.
func TestEmbedIsRefused(t *testing.T) {
	s := newSession(t)
	_, err := s.Check("import _ \"embed\"\n\n//go:embed notes.txt\nvar notes string", 1)
	var ce *Error
	if !errors.As(err, &ce) || !strings.Contains(ce.Error(), "cell[1]:3:1: //go:embed is not supported") {
		t.Fatalf("err = %v", err)
	}
}

// A redefinition that leaves several earlier declarations behind says so in
// one line, naming them; the compiler's reasons are in Kept.
func TestRedefinitionWarnsOnceNamingWhatItKeeps(t *testing.T) {
	s := newSession(t)
	run(t, s, 1, "type T struct{ a int }\nfunc (t T) A() int { return t.a }\nfunc f1(t T) int { return t.a }\nfunc f2(t T) int { return t.a + 1 }")
	c := run(t, s, 2, "type T []int")
	if len(c.Warnings) != 1 {
		t.Fatalf("want one warning line, got %q", c.Warnings)
	}
	w := c.Warnings[0]
	for _, want := range []string{
		"func f1 (cell[1]) and func f2 (cell[1]) keep their previous definitions",
		"method T.A (cell[1]) is not carried over to the new T",
		"they do not compile with this cell's declarations",
	} {
		if !strings.Contains(w, want) {
			t.Errorf("warning %q lacks %q", w, want)
		}
	}
	if strings.Contains(w, "\n") {
		t.Errorf("warning spans lines: %q", w)
	}
	if len(c.Kept) != 3 || !strings.Contains(strings.Join(c.Kept, "\n"), "t.a undefined") {
		t.Errorf("Kept = %q, want the three declarations with the compiler's reasons", c.Kept)
	}
}

// A cell Go accepts on its own is accepted in the session: an earlier
// cell's println does not take the builtin from a cell that calls it the
// builtin's way, and an import binds its name over an earlier variable.
func TestCellGoAcceptsAloneIsAccepted(t *testing.T) {
	s := newSession(t)
	run(t, s, 1, "func println(a, b int) {}")
	c := run(t, s, 2, `func main() { println("x", 1, 2) }`)
	if obj := c.Info.Uses[findIdent(t, c, "println")]; obj == nil || obj.Parent() != types.Universe {
		t.Errorf("println in cell 2 is %v, want the builtin", obj)
	}
	// Where the session's println fits, it is the session's.
	c = run(t, s, 3, "println(1, 2)")
	if obj := c.Info.Uses[findIdent(t, c, "println")]; obj == nil || obj.Parent() == types.Universe {
		t.Errorf("println in cell 3 is %v, want cell 1's", obj)
	}

	run(t, s, 5, `var bytes = []byte("hi")`)
	run(t, s, 6, "import \"bytes\"\nvar up = bytes.ToUpper([]byte(\"a\"))")
}

func findIdent(t *testing.T, c *Cell, name string) *ast.Ident {
	t.Helper()
	for id := range c.Info.Uses {
		if id.Name == name {
			return id
		}
	}
	t.Fatalf("no use of %s", name)
	return nil
}

// Redefining what a method of an alias receiver uses recompiles the method
// with the alias and the type it denotes (go/types follows the receiver's
// alias to the type in the same file; without it the checker crashed).
func TestRedefinitionUnderAnAliasReceiver(t *testing.T) {
	for _, cells := range [][]string{
		{"type U int\ntype T = U\nvar g = 1\nfunc (T) m() int { return g }", "var g float64 = 4.5"},
		{"type U int\ntype T = U\nvar g = 1\nfunc (*T) m() int { return g }", "const g float64 = 4.5"},
		{"type U int\ntype T = U\nfunc g() int { return 1 }\nfunc (T) m() int { return g() }", "func g() string { return \"x\" }"},
	} {
		s := newSession(t)
		run(t, s, 1, cells[0])
		run(t, s, 2, cells[1])
	}
}

// A type of a group recompiled for a redefinition does not bring back the
// group's other types that the cell declares anew.
func TestRecompiledGroupLeavesOutWhatTheCellRedeclares(t *testing.T) {
	s := newSession(t)
	run(t, s, 1, "type (\n\tS struct{ f int }\n\tT struct{ n int }\n)\nfunc h() int { return 1 }\nfunc (T) m() int { return h() }")
	run(t, s, 2, "type S struct{ g string }\nfunc h() int { return 2 }\nvar x = S{g: \"y\"}")
	run(t, s, 3, "type S struct{ g string }\nfunc h() string { return \"\" }")
}

// A cell that binds an earlier type's name as something else (a function,
// an import) replaces it: the old type's methods and the declarations that
// used it stay as they were instead of being compiled again beside it.
func TestRebindingANameAsAnotherKind(t *testing.T) {
	s := newSession(t)
	run(t, s, 1, "type foo struct{}\nfunc (foo) X() {}")
	run(t, s, 2, "func foo[T any](d T) {}")
	run(t, s, 3, "var strings = []string{\"a\"}\nfunc n() int { return len(strings) }")
	run(t, s, 4, "import \"strings\"\nvar up = strings.ToUpper(\"a\")")
}

func TestSameNamedTypesOfTwoCellsAreToldApart(t *testing.T) {
	s := newSession(t)
	run(t, s, 1, "type T struct{ a int }\nv := T{1}")
	run(t, s, 2, "type T struct{ a, b int }")
	reject(t, s, 3, "var z T = v", "cannot use v (variable of struct type T (cell[1])) as T (cell[2]) value in variable declaration")
	reject(t, s, 4, "var p *T = &v", "cannot use &v (value of type *T (cell[1])) as *T (cell[2]) value")
	reject(t, s, 5, "w := T{}\n_ = w == v", "mismatched types T (cell[2]) and T (cell[1])")
	reject(t, s, 6, "type T int\nvar q T = v", "as T (cell[6]) value")
	// Types spelled differently keep Go's message.
	reject(t, s, 7, "var n int = v", "cannot use v (variable of struct type T) as int value")
}

// A value receiver of a type that holds cgo.Incomplete passes go/types but
// not the compiler: a method carried over to such a redefinition is left
// behind, and a cell's own is refused with the compiler's words.
func TestNotInHeapValueReceivers(t *testing.T) {
	s := newSession(t)
	run(t, s, 1, "type S struct{ x int }\nfunc (s S) Get() int { return s.x }\nfunc (p *S) Set(v int) { p.x = v }")
	c := run(t, s, 2, "import \"runtime/cgo\"\n\ntype S struct {\n\t_ cgo.Incomplete\n\tx int\n}")
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "method S.Get (cell[1]) is not carried over to the new S") {
		t.Fatalf("warnings %q", c.Warnings)
	}
	if !strings.Contains(strings.Join(c.Kept, "\n"), "S is incomplete (or unallocatable); stack allocation disallowed") {
		t.Errorf("Kept = %q", c.Kept)
	}
	_, err := s.Check("type W struct{ s [2]S }\nfunc (w W) M() {}", 3)
	var ce *Error
	if !errors.As(err, &ce) || !strings.Contains(ce.Error(), "cell[3]:2:7: W is incomplete (or unallocatable); stack allocation disallowed") {
		t.Fatalf("err = %v", err)
	}
}

// An earlier cell's blank declaration binds nothing: a later function's
// blank result parameter is still in scope at a bare return.
func TestBlankDeclarationsBindNothing(t *testing.T) {
	s := newSession(t)
	run(t, s, 1, "var _ string = \"x\"\ntype _ struct{}")
	run(t, s, 2, "func f() (_ string, err error) {\n\treturn\n}\nvar _ = f")
}

// print and println of an array or a struct: go/types accepts them, the
// compiler does not (Go's test/turing.go after a cell that printed another
// a). The cell gets the compiler's message; an earlier function that
// printed the old a keeps its definition.
func TestPrintOperandsTheCompilerRejects(t *testing.T) {
	s := newSession(t)
	run(t, s, 1, "var a int\nfunc show() { print(a) }\ntype P struct{ x int }")
	c := run(t, s, 2, "var a [30]byte")
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "func show (cell[1]) keeps its previous definition") {
		t.Fatalf("warnings %q", c.Warnings)
	}
	if !strings.Contains(strings.Join(c.Kept, "\n"), "illegal types for operand: print\n\t[30]byte") {
		t.Errorf("Kept = %q", c.Kept)
	}
	_, err := s.Check("var p P\nprintln(1, p, &p, []int{}, any(p))", 3)
	var ce *Error
	if !errors.As(err, &ce) || ce.Error() != "cell[3]:2:8: illegal types for operand: print\n\tP" {
		t.Fatalf("err = %v", err)
	}
	run(t, s, 4, "func g[T any](x T) { print(x) }\ntype print2 = int\nprint(1, \"s\", 2.5, true, nil == any(nil), &a, a[:], map[int]int{}, func() {}, make(chan int))")
}

// A method of an earlier T is not carried over to a new T that has the name
// through an embedded field: carried, it would hide the promoted method,
// as a program with the new T alone would not (Go's
// test/fixedbugs/issue54348.go after issue54343.go).
func TestPromotedMethodIsNotHiddenByACarriedOne(t *testing.T) {
	s := newSession(t)
	run(t, s, 1, "type T[X any] [4]int\nfunc (*T[X]) M() {}\nfunc (T[X]) N() {}")
	c := run(t, s, 2, "type T[X any] struct{ E }\ntype E struct{}\nfunc (h E) M() {}\nfunc F[X interface{ M() }]() {\n\tvar x X\n\tx.M()\n}\nfunc main() { F[T[int]]() }")
	want := []string{"warning: method T.M (cell[1]) is not carried over: the new T has M through its field E"}
	if !slices.Equal(c.Warnings, want) {
		t.Fatalf("warnings %q, want %q", c.Warnings, want)
	}
	// N is carried over as before.
	run(t, s, 3, "var t T[int]\nt.N()\nt.M()")
}
