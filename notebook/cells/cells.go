// Package cells splits the source of a notebook cell into its top-level
// pieces. A Go notebook cell may mix what a Go file allows (imports, type,
// func, const and var declarations) with what a function body allows
// (statements and expressions), in any order; neither go/parser mode accepts
// that mix. Split tokenizes the cell with go/scanner, cuts it at the
// semicolons (explicit or automatic) that sit outside any bracket, and
// classifies each piece by its first token. Blank then builds, for a chosen
// subset of the pieces, a text of the same shape as the cell (every other
// byte replaced by a space, newlines kept), so that parsing that text reports
// positions that are the cell's own lines and columns.
//
// Split never fails and never panics: on malformed input it still returns a
// covering of the tokens it could read, and the parser reports the error
// later with the cell's positions.
package cells

import (
	"go/scanner"
	"go/token"
	"strings"
)

// Kind classifies a top-level piece of a cell.
type Kind int

// The kinds of pieces.
const (
	// Stmt is a statement or expression: it runs in order with the other
	// statements of the cell.
	Stmt Kind = iota
	// Import is an import declaration (single or grouped).
	Import
	// Decl is a type, func (not a function literal), const or var declaration.
	Decl
	// Package is a package clause; it carries no meaning in a notebook.
	Package
)

func (k Kind) String() string {
	switch k {
	case Import:
		return "import"
	case Decl:
		return "decl"
	case Package:
		return "package"
	default:
		return "stmt"
	}
}

// Unit is one top-level piece of a cell: src[Start:End].
type Unit struct {
	Kind Kind
	// Tok is the first token: token.IMPORT, token.FUNC, token.TYPE,
	// token.CONST, token.VAR, token.PACKAGE, or whatever starts a statement.
	Tok        token.Token
	Start, End int
}

type tok struct {
	pos int // byte offset
	end int
	tok token.Token
	lit string
}

// Split cuts src into its top-level units, in source order. Comments that
// precede a unit (after the previous unit's end) belong to it, so a doc
// comment travels with its declaration.
func Split(src string) []Unit {
	toks := scan(src)
	var units []Unit
	depth := 0
	start := -1 // index into toks of the unit's first token
	flush := func(endTok int) {
		if start < 0 {
			return
		}
		// First non-comment token decides the kind.
		first := -1
		for i := start; i <= endTok; i++ {
			if toks[i].tok != token.COMMENT {
				first = i
				break
			}
		}
		if first < 0 {
			// Only comments: attach them to nothing (a comment-only cell).
			start = -1
			return
		}
		u := Unit{Tok: toks[first].tok, Start: toks[start].pos, End: toks[endTok].end}
		u.Kind = classify(toks, first, endTok)
		units = append(units, u)
		start = -1
	}
	last := -1 // last non-semicolon token index
	for i, t := range toks {
		switch t.tok {
		case token.LPAREN, token.LBRACK, token.LBRACE:
			depth++
		case token.RPAREN, token.RBRACK, token.RBRACE:
			if depth > 0 {
				depth--
			}
		}
		if t.tok == token.SEMICOLON && depth == 0 {
			if t.lit == ";" && start >= 0 {
				// An explicit semicolon belongs to the unit it ends, so
				// that units on one line stay separated when kept.
				last = i
			}
			flush(last)
			continue
		}
		if t.tok == token.SEMICOLON && t.lit == "\n" {
			// An automatic semicolon inside brackets (malformed code): ignore.
		}
		if start < 0 {
			start = i
		}
		if t.tok != token.SEMICOLON || t.lit != "\n" {
			last = i
		}
	}
	if start >= 0 && last >= start {
		flush(last)
	}
	return units
}

// classify decides the kind of the unit toks[first..end].
func classify(toks []tok, first, end int) Kind {
	switch toks[first].tok {
	case token.IMPORT:
		return Import
	case token.PACKAGE:
		return Package
	case token.TYPE, token.CONST, token.VAR:
		return Decl
	case token.FUNC:
		next := nextCode(toks, first+1, end)
		if next < 0 {
			return Stmt
		}
		switch toks[next].tok {
		case token.IDENT:
			return Decl // func Name(
		case token.LPAREN:
			// A receiver `func (r T) Name(` or a literal `func(x int) T {`.
			closeIdx := matchParen(toks, next, end)
			if closeIdx < 0 {
				return Stmt
			}
			a := nextCode(toks, closeIdx+1, end)
			if a < 0 || toks[a].tok != token.IDENT {
				return Stmt
			}
			b := nextCode(toks, a+1, end)
			if b >= 0 && (toks[b].tok == token.LPAREN || toks[b].tok == token.LBRACK) {
				return Decl
			}
		}
		return Stmt
	}
	return Stmt
}

func nextCode(toks []tok, i, end int) int {
	for ; i <= end && i < len(toks); i++ {
		if toks[i].tok != token.COMMENT {
			return i
		}
	}
	return -1
}

func matchParen(toks []tok, open, end int) int {
	d := 0
	for i := open; i <= end && i < len(toks); i++ {
		switch toks[i].tok {
		case token.LPAREN:
			d++
		case token.RPAREN:
			d--
			if d == 0 {
				return i
			}
		}
	}
	return -1
}

// scan tokenizes src, comments included. Scanner errors are ignored here; the
// parser reports them later.
func scan(src string) []tok {
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(src))
	var s scanner.Scanner
	s.Init(file, []byte(src), func(token.Position, string) {}, scanner.ScanComments)
	var toks []tok
	for {
		p, t, lit := s.Scan()
		if t == token.EOF {
			break
		}
		off := file.Offset(p)
		n := len(lit)
		switch {
		case t == token.SEMICOLON && lit == "\n":
			n = 0
		case t == token.SEMICOLON && lit != ";":
			n = 0 // automatic semicolon at EOF ("\n" or "")
		case lit == "":
			n = len(t.String())
		}
		if t == token.ILLEGAL {
			n = 1 // an invalid byte; lit may be a 3-byte replacement rune
		}
		if t.IsOperator() && lit == "" {
			n = len(t.String())
		}
		end := off + n
		if end > len(src) {
			end = len(src)
		}
		if t == token.COMMENT && strings.HasPrefix(lit, "//") {
			// A line comment's literal excludes the newline; fine.
			end = off + len(lit)
		}
		toks = append(toks, tok{pos: off, end: end, tok: t, lit: lit})
		if len(toks) > 1<<20 {
			break // absurd input; stop rather than eat memory
		}
	}
	// A token never extends past the start of the next one.
	for i := 0; i+1 < len(toks); i++ {
		if toks[i].end > toks[i+1].pos && toks[i+1].pos >= toks[i].pos {
			toks[i].end = toks[i+1].pos
		}
	}
	return toks
}

// Blank returns src with every byte outside the kept units replaced by a
// space, except line breaks, which are kept: the result parses to positions
// that are src's own lines and columns.
func Blank(src string, units []Unit, keep func(Unit) bool) string {
	b := []byte(src)
	mask := make([]bool, len(b))
	for _, u := range units {
		if keep(u) {
			for i := max(u.Start, 0); i < u.End && i < len(b); i++ {
				mask[i] = true
			}
		}
	}
	for i := range b {
		if !mask[i] && b[i] != '\n' && b[i] != '\r' {
			b[i] = ' '
		}
	}
	return string(b)
}

// Magic is a leading line of a cell that starts with % or !.
type Magic struct {
	Line int    // 1-based line in the cell
	Text string // the line without its line break (a continued ! line: all its lines)
}

// SplitMagics takes the magic lines at the start of a cell (lines starting
// with % or !, possibly after blank lines) and returns them with the rest of
// the cell, in which the magic lines are blanked so positions still match the
// cell. A line `%%name` (cell magic) is returned like a line magic. A `!` line
// ending in a backslash continues on the next line, as in the shell (the
// Magic's Text keeps the backslash and the line breaks; sh removes both).
func SplitMagics(src string) (magics []Magic, code string) {
	lines := strings.SplitAfter(src, "\n")
	var out strings.Builder
	inMagics := true
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		t := strings.TrimSpace(l)
		if inMagics && (strings.HasPrefix(t, "%") || strings.HasPrefix(t, "!")) {
			m := Magic{Line: i + 1, Text: strings.TrimRight(t, "\r\n")}
			if strings.HasSuffix(l, "\n") {
				out.WriteString("\n")
			}
			for strings.HasPrefix(t, "!") && continued(m.Text) && i+1 < len(lines) {
				i++
				m.Text += "\n" + strings.TrimRight(lines[i], "\r\n")
				if strings.HasSuffix(lines[i], "\n") {
					out.WriteString("\n")
				}
			}
			magics = append(magics, m)
			continue
		}
		if t != "" {
			inMagics = false
		}
		out.WriteString(l)
	}
	return magics, out.String()
}

// continued reports whether a shell line ends in an unescaped backslash.
func continued(line string) bool {
	n := len(line) - len(strings.TrimRight(line, "\\"))
	return n%2 == 1
}
