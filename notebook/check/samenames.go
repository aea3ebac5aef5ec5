package check

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strings"
)

// Every cell is package main, so a type an earlier cell declared and the
// same name declared again print alike in Go's messages: "cannot use v
// (variable of struct type T) as T value". When a message sets two such
// types against each other, the types are given the cells that declared
// them: "cannot use v (variable of struct type T (cell[1])) as T (cell[3])
// value". Two messages do that: an assignment ("cannot use X (... type A)
// as B value") and an operation on mismatched types ("mismatched types A
// and B").

// nameCells rewrites the messages of diags that set two types spelled
// alike against each other. file and info are the check's (complete).
func (st *state) nameCells(diags []Diag, file *ast.File, info *types.Info) []Diag {
	for i, d := range diags {
		if !strings.Contains(d.Msg, "cannot use ") && !strings.Contains(d.Msg, "mismatched types ") {
			continue
		}
		if msg, ok := st.nameCellsIn(d, file, info); ok {
			diags[i].Msg = msg
		}
	}
	return diags
}

// nameCellsIn rewrites one message, or says it cannot.
func (st *state) nameCellsIn(d Diag, file *ast.File, info *types.Info) (string, bool) {
	qual := func(*types.Package) string { return "" }
	switch {
	case strings.HasPrefix(d.Msg, "cannot use "):
		x := st.exprAt(d.Pos, info)
		if x == nil {
			return "", false
		}
		xt := info.Types[x].Type
		xs := types.TypeString(xt, qual)
		head := " type " + xs + ")"
		tail := " as " + xs + " value"
		i, j := strings.Index(d.Msg, head), strings.LastIndex(d.Msg, tail)
		if i < 0 || j < i {
			return "", false // the types are spelled differently
		}
		from, ok := st.cellOfNamed(xt, info)
		if !ok {
			return "", false
		}
		to, ok := st.otherCell(from, info)
		if !ok {
			return "", false
		}
		msg := d.Msg[:j] + " as " + annotate(xs, to) + " value" + d.Msg[j+len(tail):]
		return msg[:i] + " type " + annotate(xs, from) + ")" + msg[i+len(head):], true
	case strings.Contains(d.Msg, "mismatched types "):
		be := st.binaryAt(d.Pos, file)
		if be == nil {
			return "", false
		}
		lt, rt := info.Types[be.X].Type, info.Types[be.Y].Type
		if lt == nil || rt == nil {
			return "", false
		}
		ls, rs := types.TypeString(lt, qual), types.TypeString(rt, qual)
		pair := "mismatched types " + ls + " and " + rs
		if ls != rs || !strings.Contains(d.Msg, pair) {
			return "", false
		}
		l, ok1 := st.cellOfNamed(lt, info)
		r, ok2 := st.cellOfNamed(rt, info)
		if !ok1 || !ok2 || l.cell == r.cell {
			return "", false
		}
		return strings.Replace(d.Msg, pair, "mismatched types "+annotate(ls, l)+" and "+annotate(rs, r), 1), true
	}
	return "", false
}

// namedIn is the named type a message's type is made of, and the cell
// that declared it.
type namedIn struct {
	name string
	obj  *types.TypeName
	cell int
}

// annotate writes the cell after the named type's name in s, the type's
// spelling ("*T" becomes "*T (cell[1])").
func annotate(s string, n namedIn) string {
	return s + fmt.Sprintf(" (cell[%d])", n.cell)
}

// cellOfNamed finds the one named type of the session that t is made of
// (t itself, or what it points to or holds) and the cell that declared it.
func (st *state) cellOfNamed(t types.Type, info *types.Info) (namedIn, bool) {
	for {
		switch u := t.(type) {
		case *types.Pointer:
			t = u.Elem()
			continue
		case *types.Slice:
			t = u.Elem()
			continue
		case *types.Array:
			t = u.Elem()
			continue
		case *types.Chan:
			t = u.Elem()
			continue
		}
		break
	}
	n, ok := types.Unalias(t).(*types.Named)
	if !ok || n.Obj().Pkg() != st.s.pkg || n.TypeArgs().Len() > 0 {
		return namedIn{}, false
	}
	obj := n.Obj()
	if e := st.s.byObj[obj]; e != nil {
		return namedIn{obj.Name(), obj, e.Cell}, true
	}
	if definedIn(obj, info) {
		return namedIn{obj.Name(), obj, st.n}, true
	}
	return namedIn{}, false
}

// otherCell is the cell of the other type named like n the message sets
// it against: the binding of the name this cell sees, when that is not n.
func (st *state) otherCell(n namedIn, info *types.Info) (namedIn, bool) {
	for id, obj := range info.Defs {
		if tn, ok := obj.(*types.TypeName); ok && id.Name == n.name && tn != n.obj && tn.Parent() != nil && tn.Parent().Parent() == types.Universe {
			return namedIn{n.name, tn, st.n}, true
		}
	}
	if e := st.s.names[n.name]; e != nil && e.Kind == TypeEntry && e.Obj != types.Object(n.obj) {
		return namedIn{n.name, e.Obj.(*types.TypeName), e.Cell}, true
	}
	return namedIn{}, false
}

// definedIn says whether obj is declared by the checked file.
func definedIn(obj types.Object, info *types.Info) bool {
	for _, o := range info.Defs {
		if o == obj {
			return true
		}
	}
	return false
}

// exprAt is the outermost expression of the check that starts at pos.
func (st *state) exprAt(pos token.Position, info *types.Info) ast.Expr {
	var best ast.Expr
	for x := range info.Types {
		p := st.s.fset.Position(x.Pos())
		if p.Filename != pos.Filename || p.Line != pos.Line || p.Column != pos.Column {
			continue
		}
		if best == nil || x.End() > best.End() {
			best = x
		}
	}
	return best
}

// binaryAt is the innermost binary operation of the check that go/types
// reports mismatched types of at pos (the operation, its operator or its
// right operand).
func (st *state) binaryAt(pos token.Position, file *ast.File) *ast.BinaryExpr {
	at := func(p token.Pos) bool {
		q := st.s.fset.Position(p)
		return q.Filename == pos.Filename && q.Line == pos.Line && q.Column == pos.Column
	}
	var best *ast.BinaryExpr
	ast.Inspect(file, func(n ast.Node) bool {
		be, ok := n.(*ast.BinaryExpr)
		if ok && (at(be.Pos()) || at(be.OpPos) || at(be.Y.Pos())) &&
			(best == nil || be.End()-be.Pos() < best.End()-best.Pos()) {
			best = be
		}
		return true
	})
	return best
}
