package check

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"strings"

	"github.com/goaccel/goaccel/notebook/cells"
)

// FileName is the name positions in cell n carry: errors read
// "cell[3]:2:5: undefined: x".
func FileName(n int) string { return fmt.Sprintf("cell[%d]", n) }

// parsed is a cell cut into its parts, each parsed with the cell's own
// lines and columns.
type parsed struct {
	src     string
	n       int
	imports []*ast.GenDecl
	decls   []ast.Decl
	stmts   []ast.Stmt
	units   map[ast.Decl]*Unit // each decl's source, for re-homing later
	pkgPos  token.Pos          // a position of the cell (for the synthetic file)
	comment []*ast.CommentGroup
	texts   map[*token.File]string // the text each part was parsed from
}

const (
	filePrefix = "package main\n//line %s:1:1\n"
	bodyPrefix = "package main\nfunc _() {\n//line %s:1:1\n"
)

// parseCell parses src, the Go code of cell n (magic lines blanked).
func parseCell(fset *token.FileSet, src string, n int) (*parsed, *Error) {
	p := &parsed{src: src, n: n, units: map[ast.Decl]*Unit{}, texts: map[*token.File]string{}}
	units := cells.Split(src)
	// A var or const after a statement runs with the statements.
	seenStmt := false
	for i, u := range units {
		if u.Kind == cells.Stmt {
			seenStmt = true
		}
		if u.Kind == cells.Decl && seenStmt && (u.Tok == token.VAR || u.Tok == token.CONST) {
			units[i].Kind = cells.Stmt
		}
	}
	has := map[cells.Kind]bool{}
	for _, u := range units {
		has[u.Kind] = true
	}
	name := FileName(n)
	var errs scanner.ErrorList
	mode := parser.ParseComments | parser.SkipObjectResolution
	parseFile := func(kind cells.Kind) *ast.File {
		text := fmt.Sprintf(filePrefix, name) + cells.Blank(src, units, func(u cells.Unit) bool { return u.Kind == kind })
		f, err := parser.ParseFile(fset, name, text, mode)
		if err != nil {
			addParseErrors(&errs, err)
			return nil
		}
		if !p.pkgPos.IsValid() {
			p.pkgPos = f.Package
		}
		p.comment = append(p.comment, f.Comments...)
		p.texts[fset.File(f.Package)] = text
		return f
	}
	if has[cells.Import] {
		if f := parseFile(cells.Import); f != nil {
			for _, d := range f.Decls {
				if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
					p.imports = append(p.imports, g)
				}
			}
		}
	}
	if has[cells.Decl] {
		if f := parseFile(cells.Decl); f != nil {
			tf := fset.File(f.Package)
			for _, d := range f.Decls {
				p.decls = append(p.decls, d)
				p.units[d] = unitOf(tf, src, n, d)
			}
		}
	}
	if has[cells.Stmt] {
		text := fmt.Sprintf(bodyPrefix, name) + cells.Blank(src, units, func(u cells.Unit) bool { return u.Kind == cells.Stmt }) + "\n}\n"
		f, err := parser.ParseFile(fset, name, text, mode)
		if err != nil {
			addParseErrors(&errs, err)
		} else if len(f.Decls) != 1 {
			errs.Add(fset.Position(f.Package), "unbalanced braces in the cell")
		} else if fd, ok := f.Decls[0].(*ast.FuncDecl); !ok || fd.Body == nil {
			errs.Add(fset.Position(f.Package), "unbalanced braces in the cell")
		} else {
			p.stmts = fd.Body.List
			p.comment = append(p.comment, f.Comments...)
			p.texts[fset.File(f.Package)] = text
			if !p.pkgPos.IsValid() {
				p.pkgPos = f.Package
			}
		}
	}
	if len(errs) > 0 {
		errs.Sort()
		e := &Error{Cell: n}
		lines := strings.Split(src, "\n")
		for _, x := range errs {
			// Past the cell's last line is the wrapper's closing brace: the
			// cell ended too early.
			if x.Pos.Filename == name && x.Pos.Line > len(lines) {
				x.Pos.Line = len(lines)
				x.Pos.Column = len(lines[len(lines)-1]) + 1
				x.Msg = strings.Replace(x.Msg, "found '}'", "found 'EOF'", 1)
			}
			e.Diags = append(e.Diags, Diag{Pos: x.Pos, Msg: x.Msg, Syntax: true})
		}
		return nil, e
	}
	if !p.pkgPos.IsValid() {
		// A cell of comments only: give the synthetic file a position.
		f, _ := parser.ParseFile(fset, name, fmt.Sprintf(filePrefix, name), mode)
		if f != nil {
			p.pkgPos = f.Package
		}
	}
	return p, nil
}

func addParseErrors(errs *scanner.ErrorList, err error) {
	if list, ok := err.(scanner.ErrorList); ok {
		for _, e := range list {
			errs.Add(e.Pos, e.Msg)
		}
		return
	}
	errs.Add(token.Position{}, err.Error())
}

// unitOf returns the source of a declaration (with its doc comment) as the
// cell wrote it. A grouped declaration `var ( a = 1; b = 2 )` is one unit.
func unitOf(tf *token.File, src string, n int, d ast.Decl) *Unit {
	// The parsed text is the prefix followed by the cell blanked, so an
	// offset in the cell is the offset in the text less the prefix.
	prefix := tf.Offset(tf.LineStart(3))
	from := d.Pos()
	var doc *ast.CommentGroup
	switch d := d.(type) {
	case *ast.FuncDecl:
		doc = d.Doc
	case *ast.GenDecl:
		doc = d.Doc
	}
	if doc != nil {
		// The prefix's //line directive may be taken for the start of the
		// first declaration's doc comment.
		for _, c := range doc.List {
			if tf.Offset(c.Pos()) >= prefix {
				from = c.Pos()
				break
			}
		}
	}
	a, b := tf.Offset(from)-prefix, tf.Offset(d.End())-prefix
	if a < 0 || b > len(src) || a > b {
		return nil
	}
	pos := tf.Position(from)
	return &Unit{Src: src[a:b], Cell: n, Line: pos.Line, Col: pos.Column}
}

// parseUnit parses an earlier cell's declaration with its own positions.
func parseUnit(fset *token.FileSet, u *Unit) (ast.Decl, string, error) {
	// //line sets the position of the next line's first byte.
	text := fmt.Sprintf("package main\n//line %s:%d:%d\n%s\n", FileName(u.Cell), u.Line, u.Col, u.Src)
	f, err := parser.ParseFile(fset, FileName(u.Cell), text, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, "", err
	}
	if len(f.Decls) != 1 {
		return nil, "", fmt.Errorf("check: the source of a declaration of cell[%d] does not parse as one declaration", u.Cell)
	}
	return f.Decls[0], text, nil
}

// namesOf returns the names (not methods) that decls bind.
func namesOf(decls []ast.Decl) map[string]bool {
	names := map[string]bool{}
	for _, d := range decls {
		ids, _ := declaredNames(d)
		for _, id := range ids {
			names[id.Name] = true
		}
	}
	return names
}

// declaredNames lists what a top-level declaration binds: names (types,
// funcs, vars, consts) and methods as "Recv.Name".
func declaredNames(d ast.Decl) (names []*ast.Ident, methods [][2]string) {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil {
			if d.Name.Name != "init" && d.Name.Name != "_" {
				names = append(names, d.Name)
			}
			return
		}
		if r := cells.ReceiverType(d); r != "" {
			methods = append(methods, [2]string{r, d.Name.Name})
		}
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				names = append(names, s.Name)
			case *ast.ValueSpec:
				for _, id := range s.Names {
					if id.Name != "_" {
						names = append(names, id)
					}
				}
			}
		}
	}
	return
}

// topLevelDefs returns the names a top-level statement defines:
// x := ..., var x ..., const x = ... (through labels).
func topLevelDefs(st ast.Stmt) []*ast.Ident {
	for {
		l, ok := st.(*ast.LabeledStmt)
		if !ok {
			break
		}
		st = l.Stmt
	}
	var out []*ast.Ident
	switch st := st.(type) {
	case *ast.AssignStmt:
		if st.Tok == token.DEFINE {
			for _, l := range st.Lhs {
				if id, ok := l.(*ast.Ident); ok && id.Name != "_" {
					out = append(out, id)
				}
			}
		}
	case *ast.DeclStmt:
		if g, ok := st.Decl.(*ast.GenDecl); ok && (g.Tok == token.VAR || g.Tok == token.CONST) {
			ids, _ := declaredNames(g)
			out = append(out, ids...)
		}
	}
	return out
}

// isMain reports whether d is `func main()`.
func isMain(d ast.Decl) bool {
	fd, ok := d.(*ast.FuncDecl)
	return ok && fd.Recv == nil && fd.Name.Name == "main"
}
