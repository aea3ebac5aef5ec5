package export

import (
	"context"
	"errors"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// exportData imports packages from their export data, which go list
// builds (into Go's build cache).
func exportData(fset *token.FileSet) types.Importer {
	return importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		out, err := exec.Command("go", "list", "-export", "-f", "{{.Export}}", path).Output()
		if err != nil {
			return nil, fmt.Errorf("go list %s: %w", path, err)
		}
		return os.Open(strings.TrimSpace(string(out)))
	})
}

// options checks cells against export data, adding the imports the kernel
// adds for the packages these tests forget.
func options() Options {
	fset := token.NewFileSet()
	return Options{
		Importer: exportData(fset), FileSet: fset,
		AutoImport: func(name string) string {
			switch name {
			case "strings", "os", "fmt":
				return name
			}
			return ""
		},
	}
}

// runProgram builds main.go as a module that requires this checkout of
// goaccel and returns what it prints.
func runProgram(t *testing.T, main []byte) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mod := "module prog\n\ngo 1.26\n\nrequire github.com/goaccel/goaccel v0.0.0-00010101000000-000000000000\n\nreplace github.com/goaccel/goaccel => " + root + "\n"
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"main.go": main, "go.mod": []byte(mod), "go.sum": sum} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "prog")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s\n-- main.go --\n%s", err, out, main)
	}
	run := exec.Command(bin)
	run.Dir = dir
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("program: %v\n%s\n-- main.go --\n%s", err, out, main)
	}
	return string(out)
}

// The notebook e2e/test_export.py runs through the kernel: the program
// prints what Run All printed there (checked against the kernel there;
// here against Go's semantics of each redefinition).
func TestRedefinitionsKeepWhatEachCellRanWith(t *testing.T) {
	cells, err := ReadNotebook("testdata/redefinitions.ipynb")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Export(context.Background(), cells, options())
	if err != nil {
		t.Fatal(err)
	}
	got := runProgram(t, res.Main)
	want := `g: 10 {1 2}
3
g after: 20
{1 2} P(3,4)
[0 1 4]
"NOW A STRING"
Set: GOACCEL_EXPORT_TEST="set"
"set"
   Name  Score
0  a       1.5
1  b         2
1, "two"
81
0 81
main of cell 12, counter 100
hello gopher []
from the shell
101
`
	if got != want {
		t.Errorf("the program printed\n%s\nwant\n%s\n-- main.go --\n%s", got, want, res.Main)
	}
	src := string(res.Main)
	for _, s := range []string{
		"// f again, with the same signature: g, compiled before, calls the new one.", // comments travel
		"type Point_cell1 struct",   // the Point p was made with
		"var f func() int",          // late binding
		"f = f_cell3",               // where cell 3 ran
		"xs = make([]int, n_cell2)", // the initializer runs where its cell ran, with cell 2's n
		"rand2.N(1)",                // two imports named rand
	} {
		if !strings.Contains(src, s) {
			t.Errorf("main.go lacks %q:\n%s", s, src)
		}
	}
	if len(res.Notes) != 0 {
		t.Errorf("notes: %q", res.Notes)
	}
}

func TestWhatAProgramCannotCarryIsNamed(t *testing.T) {
	cells := []Cell{
		{Source: `import "fmt"`},
		{Source: "%who\nfmt.Println(1)"},
		{Source: "panic(\"on purpose\")", LeaveOut: "tagged raises-exception"},
		{Source: "%%writefile x.txt\nhello"},
		{Source: `import "github.com/goaccel/goaccel/debuglauncher"

res, err := debuglauncher.DebugLauncher(func() int { return 1 }, nil, 2)
fmt.Println(res, err != nil)`},
	}
	opts := options()
	res, err := Export(context.Background(), cells, Options{
		Importer: opts.Importer, FileSet: opts.FileSet,
	})
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(res.Notes, "\n")
	for _, s := range []string{
		"cell [2] line 1: %who has no program equivalent",
		"cell [3] line 1: left out: tagged raises-exception",
		"cell [4] line 1: %%writefile has no program equivalent",
		"cell [5] line 3: debuglauncher.DebugLauncher carries a notebook's function",
	} {
		if !strings.Contains(notes, s) {
			t.Errorf("notes lack %q:\n%s", s, notes)
		}
	}
	if !strings.Contains(string(res.Main), "// not carried: %who") {
		t.Errorf("main.go does not show the command it left out:\n%s", res.Main)
	}
}

func TestACellGoRejectsNamesTheCell(t *testing.T) {
	_, err := Export(context.Background(), []Cell{{Source: "x := 1"}, {Source: "\n"}, {Source: "y := x + \"a\""}}, options())
	var ce *CellError
	if !errors.As(err, &ce) || ce.Cell != 2 {
		t.Fatalf("err = %v, want a CellError of cell 2", err)
	}
	if !strings.Contains(err.Error(), "cell[2]:1:") || !strings.Contains(err.Error(), "mismatched types") {
		t.Errorf("err = %v: want Go's message at the cell's line", err)
	}
}

func TestANotebookThatIsNotOneIsRefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.ipynb")
	if err := os.WriteFile(p, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadNotebook(p); err == nil || !strings.Contains(err.Error(), "is not a notebook") {
		t.Errorf("err = %v", err)
	}
}

// A variable whose type the program cannot write keeps its initializer at
// package level, and the notes say it runs before main.
func TestAVariableOfAnUnexportedTypeKeepsItsInitializer(t *testing.T) {
	cells := []Cell{
		{Source: `import "github.com/goaccel/goaccel/notebook/export/internal/unexported"`},
		{Source: "var c = unexported.New()\nc.Inc()"},
	}
	res, err := Export(context.Background(), cells, options())
	if err != nil {
		t.Fatal(err)
	}
	src := string(res.Main)
	if !strings.Contains(src, "var c = unexported.New()") || !strings.Contains(src, "display.PrintResult(c.Inc())") {
		t.Errorf("main.go:\n%s", src)
	}
	notes := strings.Join(res.Notes, "\n")
	if !strings.Contains(notes, "cell [2] line 1: c has type *github.com/goaccel/goaccel/notebook/export/internal/unexported.counter, which type unexported.counter is not exported by its package") {
		t.Errorf("notes: %s", notes)
	}
}
