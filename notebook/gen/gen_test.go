package gen

import (
	"errors"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"strings"
	"sync"
	"testing"

	"github.com/goaccel/goaccel/notebook/check"
)

var (
	impOnce sync.Once
	impFset *token.FileSet
	imp     types.Importer
	srcImp  types.Importer
)

func importers() {
	impOnce.Do(func() {
		impFset = token.NewFileSet()
		imp = importer.ForCompiler(impFset, "gc", nil)
		srcImp = importer.ForCompiler(token.NewFileSet(), "source", nil)
	})
}

// generate checks src as the first cell of a session and generates its
// package.
func generate(t *testing.T, src string) (*check.Cell, string) {
	t.Helper()
	importers()
	s := check.NewSession(check.Config{Importer: imp, FileSet: impFset, GoVersion: "go1.26"})
	c, err := s.Check(src, 1)
	if err != nil {
		var ce *check.Error
		if errors.As(err, &ce) {
			t.Fatalf("cell rejected:\n%s", strings.Join(ce.Lines(s.Source), "\n"))
		}
		t.Fatal(err)
	}
	out, err := Generate(Input{Cell: c, Path: "goaccel.cells/test"})
	if err != nil {
		t.Fatal(err)
	}
	return c, string(out.Source)
}

// typecheck type-checks a generated package (gxrt from source).
func typecheck(t *testing.T, src string) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "cell.go", src, parser.ParseComments)
	if err != nil {
		t.Fatalf("generated code does not parse: %v\n%s", err, src)
	}
	conf := types.Config{Importer: srcImp.(types.ImporterFrom), GoVersion: "go1.26"}
	if _, err := conf.Check("goaccel.cells/test", fset, []*ast.File{f}, nil); err != nil {
		t.Fatalf("generated code does not type-check: %v\n%s", err, src)
	}
}

// lineOf returns the cell line the generated code's line with want is
// attributed to (by the //line directives), or 0.
func lineOf(t *testing.T, src, want string) int {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "cell.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	off := strings.Index(src, want)
	if off < 0 {
		t.Fatalf("%q not in the generated code:\n%s", want, src)
	}
	return fset.Position(fset.File(f.Pos()).Pos(off)).Line
}

func TestBlockingOperationsAreRewritten(t *testing.T) {
	importers()
	cases := []struct {
		name, src string
		want      []string // in the generated code
		not       []string
		line      map[string]int // generated text → the cell line it must keep
	}{
		{
			name: "receive",
			src:  "ch := make(chan int, 1)\nch <- 1\nx := <-ch\nv, ok := <-ch\nvar w, ok2 = <-ch\n_, _, _, _ = x, v, ok, ok2\n<-ch",
			want: []string{"_gxrt.SendTo(ch).Send(1)", "x = _gxrt.Recv(ch)", "v, ok = _gxrt.Recv2(ch)", "_gxrt.Recv2(ch)", "_gxrt.Recv(ch)"},
			line: map[string]int{"_gxrt.SendTo(ch).Send(1)": 2, "x = _gxrt.Recv(ch)": 3},
		},
		{
			name: "receive in a declared function, send of a value assigned to the element type",
			src:  "func f(ch chan any, done <-chan struct{}) int {\n\tch <- 5\n\t<-done\n\treturn 1\n}",
			want: []string{"_gxrt.SendTo(ch).Send(5)", "_gxrt.Recv(done)"},
			line: map[string]int{"_gxrt.Recv(done)": 3},
		},
		{
			name: "generic channel",
			src:  "func get[C ~chan E, E any](c C) E { return <-c }",
			want: []string{"return _gxrt.Recv(c)"},
		},
		{
			name: "range over a channel",
			src:  "ch := make(chan int)\nclose(ch)\nsum := 0\nfor v := range ch {\n\tsum += v\n}\nfor range ch {\n}\nvar w int\nfor w = range ch {\n\tbreak\n}\n_ = w\nsum",
			want: []string{"for _gxc1 := ch; ; { v, _gxok1 := _gxrt.Recv2(_gxc1); if !_gxok1 { break }; _ = v; _gxrt.Check();", "if _, _gxok2 := _gxrt.Recv2(_gxc2); !_gxok2 { break }", "_gxv3, _gxok3 := _gxrt.Recv2(_gxc3); if !_gxok3 { break }; w = _gxv3;"},
			not:  []string{"range ch"},
			line: map[string]int{"sum += v": 5, "for _gxc2": 7, "break\n": 11},
		},
		{
			name: "select",
			src:  "func f(a, b chan int) int {\n\tselect {\n\tcase v := <-a:\n\t\treturn v\n\tcase b <- 1:\n\t}\n\tL:\n\tselect {\n\tcase <-a:\n\t\tbreak L\n\t}\n\tselect {\n\tcase <-a:\n\tdefault:\n\t}\n\tselect {}\n}",
			want: []string{
				"_gxs1: select {case <-_gxrt.Intr(): _gxrt.Wake(); goto _gxs1;",
				"case v := <-a:", "case b <- 1:",
				"_gxs2: L:\n\tselect {case <-_gxrt.Intr(): _gxrt.Wake(); goto _gxs2;",
				"select {\n\tcase <-a:\n\tdefault:",
				"for { _gxrt.Block() }",
			},
			line: map[string]int{"case v := <-a:": 3, "for { _gxrt.Block() }": 16},
		},
		{
			name: "sleep, locks, wait groups",
			src: "import (\n\t\"sync\"\n\t\"time\"\n)\n" +
				"type guarded struct {\n\tsync.Mutex\n\tn int\n}\n" +
				"type inner struct{ rw *sync.RWMutex }\n" +
				"var mu sync.Mutex\nvar rw sync.RWMutex\nvar wg sync.WaitGroup\n" +
				"func f(g *guarded, h guarded, in inner, l sync.Locker) {\n" +
				"\ttime.Sleep(time.Millisecond)\n\tmu.Lock()\n\tmu.Unlock()\n\tg.Lock()\n\th.Lock()\n\trw.RLock()\n\trw.Lock()\n\tin.rw.Lock()\n\twg.Go(func() {})\n\twg.Wait()\n\tl.Lock()\n\tsleep := time.Sleep\n\tsleep(0)\n}",
			want: []string{
				"_gxrt.Sleep(time.Millisecond)", "_gxrt.Lock(&mu)", "mu.Unlock()", "_gxrt.Lock(&g.Mutex)", "_gxrt.Lock(&h.Mutex)",
				"_gxrt.RLock(&rw)", "_gxrt.LockRW(&rw)", "_gxrt.LockRW(in.rw)", "_gxrt.Wait(&wg)", "_gxrt.WaitGroupGo(&wg, \"cell[1]:22\", func() {_gxrt.Check();})", "_gxrt.LockLocker(l)", "sleep := _gxrt.Sleep",
			},
		},
		{
			name: "stdin",
			src: "import (\n\t\"bufio\"\n\t\"fmt\"\n\t\"io\"\n\t\"os\"\n)\n" +
				"func f() io.Reader { return os.Stdin }\n" +
				"var name string\nfmt.Scanln(&name)\nfmt.Scan(&name)\nfmt.Scanf(\"%s\", &name)\n" +
				"r := bufio.NewReader(os.Stdin)\nsc := bufio.NewScanner(os.Stdin)\nb, _ := io.ReadAll(io.LimitReader(os.Stdin, 3))\n" +
				"var in io.Reader\nin = os.Stdin\nbuf := make([]byte, 3)\nos.Stdin.Read(buf)\nfile := os.Stdin\nfmt.Fscan(os.Stdin, &name)\n_, _, _, _, _ = r, sc, b, in, file",
			want: []string{
				"return _gxrt.Stdin", "_gxrt.Scanln(&name)", "_gxrt.Scan(&name)", "_gxrt.Scanf(\"%s\", &name)",
				"bufio.NewReader(_gxrt.Stdin)", "bufio.NewScanner(_gxrt.Stdin)", "io.LimitReader(_gxrt.Stdin, 3)",
				"in = _gxrt.Stdin", "_gxrt.Stdin.Read(buf)", "file = os.Stdin", "fmt.Fscan(_gxrt.Stdin, &name)",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, src := generate(t, tc.src)
			for _, w := range tc.want {
				if !strings.Contains(src, w) {
					t.Errorf("want %q in:\n%s", w, src)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(src, w) {
					t.Errorf("want no %q in:\n%s", w, src)
				}
			}
			for w, line := range tc.line {
				if got := lineOf(t, src, w); got != line {
					t.Errorf("%q is on cell line %d, want %d:\n%s", w, got, line, src)
				}
			}
			typecheck(t, src)
		})
	}
}

func TestStatementsCheckForInterrupts(t *testing.T) {
	_, src := generate(t, "x := 1\nx++")
	if !strings.Contains(src, "_gxdone = 1; _gxrt.Stmt()") || !strings.Contains(src, "_gxdone = 2; _gxrt.Stmt()") {
		t.Fatalf("statements without a check:\n%s", src)
	}
}

func TestHookedFunctionsCheckThroughTheirHooks(t *testing.T) {
	_, src := generate(t, "func fib(n int) int {\n\tif n < 2 {\n\t\treturn n\n\t}\n\treturn fib(n-1) + fib(n-2)\n}\nfunc Hello(xs ...string) {\n\tfor range xs {\n\t}\n}")
	for _, want := range []string{
		"func fib(n int) int {if _gxh := _gxo_fib; _gxh != nil { return _gxh(n) };\n",
		"func _gxb_fib(n int) int {\n\tif n < 2 {",
		"func _gxt_fib(next func(int) (int)) func(int) (int) {\n\treturn func(_gxp0 int) (int) {\n\t\t_gxrt.Check()\n\t\tif next != nil {\n\t\t\treturn next(_gxp0)\n\t\t}\n\t\treturn _gxb_fib(_gxp0)",
		"func _gxE_Hello(xs ...string) {if _gxh := _gxo_Hello; _gxh != nil { _gxh(xs...); return };",
		"func _gxb_Hello(xs ...string) {\n\tfor range xs {_gxrt.Check();",
		"_gxb_Hello(_gxp0...)",
		`"s:fib": _gxt_fib,`,
	} {
		if !strings.Contains(src, want) {
			t.Errorf("want %q in:\n%s", want, src)
		}
	}
	if got := lineOf(t, src, "func _gxb_fib"); got != 1 {
		t.Errorf("_gxb_fib is on line %d", got)
	}
	if got := lineOf(t, src, "func _gxb_Hello"); got != 7 {
		t.Errorf("_gxb_Hello is on line %d", got)
	}
	if i := strings.Index(src, "func _gxb_fib"); i < 0 || lineOf(t, src[:i]+strings.Replace(src[i:], "return fib(n-1)", "return FIB(n-1)", 1), "return FIB(n-1)") != 5 {
		t.Error("the copy's body is not on the function's lines")
	}
	typecheck(t, src)
}
