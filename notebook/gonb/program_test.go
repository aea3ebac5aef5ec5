package gonb

import (
	"strings"
	"testing"
)

func TestProgram(t *testing.T) {
	session := []Decl{
		{Names: []string{"fmt"}, Import: true, Path: "fmt", Source: `import "fmt"`},
		{Names: []string{"os"}, Import: true, Path: "os", Source: `import "os"`},
		{Names: []string{"greet"}, Source: "func greet() string { return \"hi\" }"},
		{Names: []string{"x"}, Source: "var x = 1"},
		{Names: []string{"main"}, Source: "func main() { fmt.Println(x) }"},
	}
	cell := "import \"flag\"\n\nvar x = flag.Int(\"x\", 2, \"\")\n\nfunc main() {\n\tfmt.Println(greet(), *x, strings.ToUpper(\"a\"))\n}"
	resolve := func(name, _ string) string {
		if name == "strings" {
			return "strings"
		}
		return ""
	}
	src, err := Program(session, cell, "const Extra = 1", resolve)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"package main", "\tflag \"flag\"", "\tfmt \"fmt\"", "\tstrings \"strings\"", "func greet()", "const Extra = 1", "var x = flag.Int"} {
		if !strings.Contains(src, want) {
			t.Errorf("program lacks %q:\n%s", want, src)
		}
	}
	for _, unwanted := range []string{"\"os\"", "var x = 1", "fmt.Println(x) }"} {
		if strings.Contains(src, unwanted) {
			t.Errorf("program has %q:\n%s", unwanted, src)
		}
	}
	// a package the session imports is not imported again for a name the
	// resolver also knows (the !* program's main.go was "fmt redeclared")
	src, err = Program(session, "func main() { fmt.Println(1) }", "", func(name, _ string) string { return name })
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(src, `"fmt"`); n != 1 {
		t.Errorf("fmt imported %d times:\n%s", n, src)
	}
	if _, err := Program(nil, "x := 1\nfunc main() {}", "", nil); err == nil {
		t.Error("a statement outside main was accepted")
	}
}
