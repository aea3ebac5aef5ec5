package complete

import (
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"strings"
)

// A cell mixes top-level declarations (import, type, func, methods) with
// statements. It is parsed as two files of one package that keep the cell's
// byte offsets: the declaration file holds the cell with every statement
// blanked out, the body file holds it with every declaration blanked out,
// wrapped in "func _() { ... }". var and const go to the body, so that they
// may refer to variables declared with :=.

// segment is a top-level statement or declaration of a cell: the byte range
// [start, end), including its explicit terminating semicolon if any.
type segment struct {
	start, end int
	kind       token.Token // IMPORT, TYPE, FUNC, PACKAGE for declarations, else ILLEGAL
}

func (s segment) isDecl() bool { return s.kind != token.ILLEGAL }

// segments splits a lexed cell into top-level segments.
func segments(src string, l *lexed) []segment {
	var segs []segment
	toks := l.toks
	depth := 0
	start := -1
	first := 0
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if start < 0 {
			if t.tok == token.SEMICOLON {
				continue
			}
			start, first = t.off, i
		}
		switch t.tok {
		case token.LPAREN, token.LBRACK, token.LBRACE:
			depth++
		case token.RPAREN, token.RBRACK, token.RBRACE:
			if depth > 0 {
				depth--
			}
		}
		if depth == 0 && (t.tok == token.SEMICOLON || i == len(toks)-1) {
			end := t.end
			if t.tok == token.SEMICOLON && t.lit == "\n" {
				end = t.off
			}
			segs = append(segs, segment{start: start, end: end, kind: classify(toks[first:])})
			start = -1
		}
	}
	return segs
}

// classify tells a declaration from a statement by its first tokens.
func classify(toks []tok) token.Token {
	if len(toks) == 0 {
		return token.ILLEGAL
	}
	switch toks[0].tok {
	case token.IMPORT, token.TYPE, token.PACKAGE:
		return toks[0].tok
	case token.FUNC:
		if len(toks) > 1 && toks[1].tok == token.IDENT {
			return token.FUNC
		}
		if len(toks) > 1 && toks[1].tok == token.LPAREN {
			// A method has a receiver, then a name and its parameters;
			// a function literal has parameters, then a result or body.
			depth := 0
			for i := 1; i < len(toks); i++ {
				switch toks[i].tok {
				case token.LPAREN, token.LBRACK, token.LBRACE:
					depth++
				case token.RPAREN, token.RBRACK, token.RBRACE:
					depth--
				}
				if depth == 0 {
					if i+2 < len(toks) && toks[i+1].tok == token.IDENT && toks[i+2].tok == token.LPAREN {
						return token.FUNC
					}
					break
				}
			}
		}
	}
	return token.ILLEGAL
}

// blank returns src with the segments for which drop is true replaced by
// spaces (newlines kept, so that offsets and lines stay the same).
func blank(src string, segs []segment, drop func(segment) bool) string {
	b := []byte(src)
	for _, s := range segs {
		if !drop(s) {
			continue
		}
		for i := s.start; i < s.end && i < len(b); i++ {
			if b[i] != '\n' {
				b[i] = ' '
			}
		}
	}
	return string(b)
}

// cellParse is a cell parsed as a declaration file and a body file.
type cellParse struct {
	src              string
	fset             *token.FileSet
	decl, body       *ast.File
	declErr, bodyErr scanner.ErrorList
	declPre, bodyPre int // length of the text before the cell in each file
	imports          string
}

const bodySuffix = "\n}\n"

// parseCell parses src (lexed as l). imports is inserted before the cell in
// both files: import declarations of earlier cells, ending in ";".
func parseCell(src string, l *lexed, imports string) *cellParse {
	segs := segments(src, l)
	var cellImports strings.Builder
	for _, s := range segs {
		if s.kind == token.IMPORT {
			cellImports.WriteString(src[s.start:s.end])
			cellImports.WriteString(";")
		}
	}
	declPre := "package cell;" + imports + "\n"
	bodyPre := declPre + cellImports.String() + "func _(){\n"
	declSrc := declPre + blank(src, segs, func(s segment) bool { return !s.isDecl() || s.kind == token.PACKAGE })
	bodySrc := bodyPre + blank(src, segs, segment.isDecl) + bodySuffix
	p := &cellParse{src: src, fset: token.NewFileSet(), declPre: len(declPre), bodyPre: len(bodyPre), imports: imports}
	const mode = parser.ParseComments | parser.SkipObjectResolution | parser.AllErrors
	var err error
	p.decl, err = parser.ParseFile(p.fset, "decl.go", declSrc, mode)
	p.declErr = errList(err)
	p.body, err = parser.ParseFile(p.fset, "body.go", bodySrc, mode)
	p.bodyErr = errList(err)
	return p
}

func errList(err error) scanner.ErrorList {
	if err == nil {
		return nil
	}
	if l, ok := err.(scanner.ErrorList); ok {
		return l
	}
	return scanner.ErrorList{&scanner.Error{Msg: err.Error()}}
}

// offset maps a position in either file to a byte offset in the cell; the
// result is < 0 or > len(src) for positions in the wrapping text.
func (p *cellParse) offset(pos token.Pos) int {
	f := p.fset.File(pos)
	if f == nil {
		return -1
	}
	off := f.Offset(pos)
	if f.Name() == "body.go" {
		return off - p.bodyPre
	}
	return off - p.declPre
}

// pos maps a cell offset to a position in the body file (forBody) or the
// declaration file.
func (p *cellParse) pos(off int, forBody bool) token.Pos {
	if forBody {
		return p.fset.File(p.body.Pos()).Pos(off + p.bodyPre)
	}
	return p.fset.File(p.decl.Pos()).Pos(off + p.declPre)
}

// firstError returns the cell offset of the first syntax error, or -1.
func (p *cellParse) firstError() (int, string) {
	best, msg := -1, ""
	for _, l := range []scanner.ErrorList{p.declErr, p.bodyErr} {
		for _, e := range l {
			off := e.Pos.Offset
			if e.Pos.Filename == "body.go" {
				off -= p.bodyPre
			} else {
				off -= p.declPre
			}
			if best < 0 || off < best {
				best, msg = off, e.Msg
			}
		}
	}
	return best, msg
}

// localDecl is a name declared in the cell being edited.
type localDecl struct {
	name, kind string
	node       ast.Node // the declaring node (for doc and source)
	off        int      // cell offset of the name
}

// locals lists the names the cell declares: top-level functions, types and
// methods' receivers aside, := and var/const declarations, range variables
// and function parameters.
func (p *cellParse) locals() []localDecl {
	var out []localDecl
	add := func(id *ast.Ident, kind string, n ast.Node) {
		if id == nil || id.Name == "_" {
			return
		}
		off := p.offset(id.Pos())
		if off < 0 || off > len(p.src) {
			return
		}
		out = append(out, localDecl{name: id.Name, kind: kind, node: n, off: off})
	}
	visit := func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			if n.Recv == nil {
				add(n.Name, "func", n)
			}
		case *ast.TypeSpec:
			add(n.Name, "type", n)
		case *ast.GenDecl:
			if n.Tok == token.VAR || n.Tok == token.CONST {
				for _, s := range n.Specs {
					if vs, ok := s.(*ast.ValueSpec); ok {
						for _, id := range vs.Names {
							add(id, n.Tok.String(), n)
						}
					}
				}
			}
		case *ast.AssignStmt:
			if n.Tok == token.DEFINE {
				for _, e := range n.Lhs {
					if id, ok := e.(*ast.Ident); ok {
						add(id, "var", n)
					}
				}
			}
		case *ast.RangeStmt:
			if n.Tok == token.DEFINE {
				for _, e := range []ast.Expr{n.Key, n.Value} {
					if id, ok := e.(*ast.Ident); ok {
						add(id, "var", n)
					}
				}
			}
		case *ast.FuncType:
			for _, fl := range []*ast.FieldList{n.TypeParams, n.Params, n.Results} {
				if fl == nil {
					continue
				}
				for _, f := range fl.List {
					for _, id := range f.Names {
						add(id, "var", f)
					}
				}
			}
		}
		return true
	}
	if p.decl != nil {
		ast.Inspect(p.decl, visit)
	}
	if p.body != nil {
		ast.Inspect(p.body, visit)
	}
	return out
}

// prepare lexes and parses code for completion and inspection: the text up
// to cut (a byte offset), with extra appended and open brackets closed.
func prepare(code string, cut int, extra string, imports string) (*cellParse, *lexed) {
	text := code[:cut] + extra
	l := lex(text)
	if l.open == "" {
		text += closers(l.stack)
	}
	return parseCell(text, lex(text), imports), l
}
