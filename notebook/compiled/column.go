package compiled

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strconv"
	"strings"
)

// Locate adds a column to a cell position of a panic ("cell[3]:5" →
// "cell[3]:5:9"): the runtime knows lines only, so the column is that of
// the expression on the line that can fail the way the panic says (an index
// for "index out of range", a division for "divide by zero", a call of
// panic for a panic value, ...), when the line has one.
func (s *Session) Locate(loc string, p *Panic) string {
	file, lineText, ok := strings.Cut(loc, ":")
	if !ok || !strings.HasPrefix(file, "cell[") {
		return loc
	}
	line, err := strconv.Atoi(lineText)
	if err != nil {
		return loc
	}
	msg := fmt.Sprint(p.Value)
	var re interface{ RuntimeError() }
	runtimeErr := false
	if e, ok := p.Value.(error); ok {
		_, runtimeErr = e.(interface{ RuntimeError() })
	}
	_ = re
	want := func(n ast.Node, info *types.Info) bool {
		switch x := n.(type) {
		case *ast.IndexExpr:
			return strings.Contains(msg, "index out of range") || strings.Contains(msg, "nil map") || strings.Contains(msg, "nil pointer")
		case *ast.SliceExpr:
			return strings.Contains(msg, "slice bounds")
		case *ast.BinaryExpr:
			return strings.Contains(msg, "divide by zero") && (x.Op == token.QUO || x.Op == token.REM)
		case *ast.AssignStmt:
			return strings.Contains(msg, "divide by zero") && (x.Tok == token.QUO_ASSIGN || x.Tok == token.REM_ASSIGN)
		case *ast.StarExpr:
			return strings.Contains(msg, "nil pointer")
		case *ast.SelectorExpr:
			if !strings.Contains(msg, "nil pointer") {
				return false
			}
			if sel := info.Selections[x]; sel != nil {
				_, ptr := sel.Recv().Underlying().(*types.Pointer)
				return ptr && sel.Kind() == types.FieldVal
			}
			return false
		case *ast.TypeAssertExpr:
			return strings.Contains(msg, "interface conversion")
		case *ast.CallExpr:
			if id, ok := ast.Unparen(x.Fun).(*ast.Ident); ok && id.Name == "panic" {
				_, builtin := info.Uses[id].(*types.Builtin)
				return builtin && !runtimeErr
			}
		}
		return false
	}
	for i := len(s.order) - 1; i >= 0; i-- {
		c := s.order[i]
		var best token.Pos
		ast.Inspect(c.File, func(n ast.Node) bool {
			if n == nil || best.IsValid() {
				return false
			}
			pos := c.Fset.Position(n.Pos())
			if pos.Filename != file || pos.Line > line {
				return pos.Filename != file || pos.Line <= line
			}
			if pos.Line == line && want(n, c.Info) {
				best = n.Pos()
				return false
			}
			return true
		})
		if best.IsValid() {
			return fmt.Sprintf("%s:%d", loc, c.Fset.Position(best).Column)
		}
	}
	return loc
}
