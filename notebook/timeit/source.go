package timeit

import (
	"go/ast"
	"go/parser"
	"go/token"
	"sort"
	"strings"
)

// Parts of the function the statements become (names with _gx are the
// checker's to refuse in a cell; these only shadow a cell's, inside it).
const (
	loopsParam = "_timeitLoops"
	startParam = "_timeitStart"
	loopVar    = "_timeitI"
)

// Code is the Go expression the timed statements become, a function
// literal of type Func, and where its lines come from.
type Code struct {
	Src string
	// CellLine maps a line of Src (1-based index) to the line of the
	// cell it was written on, 0 for lines of the wrapper; columns on
	// those lines are the cell's.
	CellLine []int
}

// Func is the type of Code's function: it runs the setup, calls start,
// then runs the statements loops times.
type Func = func(loops int, start func())

// Source makes the function for setup and stmts. Each is the cell's text
// with what is not that part blanked, so its lines and columns are the
// cell's (setup "" for none). Names the setup or the statements declare
// are used after them (a cell may leave its variables unused; the
// function may not), and an expression statement that Go would reject as
// unused (x + 1) becomes an assignment to _.
func Source(setup, stmts string) Code {
	var b strings.Builder
	c := Code{CellLine: []int{0}} // lines count from 1
	line := func(s string, cellLine int) {
		b.WriteString(s)
		b.WriteByte('\n')
		c.CellLine = append(c.CellLine, cellLine)
	}
	part := func(text string) {
		text, used := prepare(text)
		for i, l := range strings.Split(text, "\n") {
			if strings.TrimSpace(l) == "" {
				continue
			}
			line(l, i+1)
		}
		if len(used) > 0 {
			line(strings.TrimSuffix(strings.Repeat("_, ", len(used)), ", ")+" = "+strings.Join(used, ", "), 0)
		}
	}
	line("func("+loopsParam+" int, "+startParam+" func()) {", 0)
	part(setup)
	line(startParam+"()", 0)
	line("for "+loopVar+" := 0; "+loopVar+" < "+loopsParam+"; "+loopVar+"++ {", 0)
	part(stmts)
	line("}", 0)
	b.WriteString("}")
	c.CellLine = append(c.CellLine, 0)
	c.Src = b.String()
	return c
}

// prepare returns text with its unused expression statements assigned to
// _, and the names its top-level statements declare. Text that does not
// parse is returned as it is: the checker names the error.
func prepare(text string) (string, []string) {
	const head = "package p\nfunc _() {\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", head+text+"\n}", 0)
	if err != nil || len(f.Decls) != 1 {
		return text, nil
	}
	body := f.Decls[0].(*ast.FuncDecl).Body
	var names []string
	seen := map[string]bool{}
	declare := func(id *ast.Ident) {
		if id.Name != "_" && !seen[id.Name] {
			seen[id.Name] = true
			names = append(names, id.Name)
		}
	}
	var edits []int // offsets in text where "_ = " goes
	for _, st := range body.List {
		switch st := st.(type) {
		case *ast.AssignStmt:
			if st.Tok == token.DEFINE {
				for _, l := range st.Lhs {
					if id, ok := l.(*ast.Ident); ok {
						declare(id)
					}
				}
			}
		case *ast.DeclStmt:
			if g, ok := st.Decl.(*ast.GenDecl); ok && g.Tok == token.VAR {
				for _, s := range g.Specs {
					for _, id := range s.(*ast.ValueSpec).Names {
						declare(id)
					}
				}
			}
		case *ast.ExprStmt:
			if !usedAsStatement(st.X) {
				edits = append(edits, fset.Position(st.Pos()).Offset-len(head))
			}
		}
	}
	sort.Sort(sort.Reverse(sort.IntSlice(edits)))
	for _, off := range edits {
		// Into the blanks before the expression when there is room, so
		// its columns stay the cell's.
		start := strings.LastIndexByte(text[:off], '\n') + 1
		if off-start >= 4 && strings.TrimSpace(text[off-4:off]) == "" {
			text = text[:off-4] + "_ = " + text[off:]
		} else {
			text = text[:off] + "_ = " + text[off:]
		}
	}
	return text, names
}

// usedAsStatement reports whether Go accepts x as a statement: a call or
// a receive (a parenthesized one too).
func usedAsStatement(x ast.Expr) bool {
	switch x := x.(type) {
	case *ast.ParenExpr:
		return usedAsStatement(x.X)
	case *ast.CallExpr:
		return true
	case *ast.UnaryExpr:
		return x.Op == token.ARROW
	}
	return false
}
