package complete

import (
	"go/ast"
	"go/token"
	"strings"

	"github.com/goaccel/goaccel/frontend"
)

// IsComplete reports whether code is ready to run, as is_complete_request
// asks:
//
//   - Complete: the cell parses (as declarations, statements or a mix of
//     both), is empty, holds only magics (lines starting with % or !), or is
//     a help request ("name?", "?name", "name??").
//   - Incomplete: more text can finish it: it ends inside an open (, [ or {,
//     an unterminated raw string, block comment or (on its last line)
//     interpreted string or rune literal, after an operator, or where the
//     parser wants more (e.g. "x :=", "if x", a func declaration without
//     body).
//   - Invalid: no appended text can fix it: a stray or mismatched closing
//     bracket, an illegal character, or a syntax error before the end.
//
// For Incomplete, indent is the text to start the next line with: the
// indentation of the line that opened the innermost open bracket (or of the
// last line) plus one level, where a level is a tab if some line of the cell
// is indented with a tab and four spaces otherwise. Inside a raw string or
// comment the indent is empty (it would become part of the text).
func IsComplete(code string) (status frontend.Completeness, indent string) {
	defer func() {
		if recover() != nil {
			status, indent = frontend.Unknown, ""
		}
	}()
	if isHelpRequest(code) {
		return frontend.Complete, ""
	}
	src := strings.TrimRight(stripMagics(code), " \t\r\n")
	if strings.TrimSpace(src) == "" {
		return frontend.Complete, ""
	}
	unit := "    "
	for _, line := range strings.Split(src, "\n") {
		if strings.HasPrefix(line, "\t") {
			unit = "\t"
			break
		}
	}
	l := lex(src)
	if l.badOff >= 0 {
		return frontend.Invalid, ""
	}
	switch l.open {
	case "raw", "comment":
		return frontend.Incomplete, ""
	case "string", "rune":
		return frontend.Incomplete, leadingSpace(src, l.openOff)
	}
	if n := len(l.stack); n > 0 {
		return frontend.Incomplete, leadingSpace(src, l.stack[n-1].off) + unit
	}
	last := leadingSpace(src, len(src))
	if t := lastToken(l); t != nil && continues(t.tok) {
		return frontend.Incomplete, last + unit
	}
	p := parseCell(src, l, "")
	off, _ := p.firstError()
	switch {
	case off < 0:
		for _, d := range p.decl.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body == nil {
				return frontend.Incomplete, last
			}
		}
		return frontend.Complete, ""
	case off >= len(src):
		return frontend.Incomplete, last
	default:
		return frontend.Invalid, ""
	}
}

// lastToken returns the last token that is not an automatic semicolon.
func lastToken(l *lexed) *tok {
	for i := len(l.toks) - 1; i >= 0; i-- {
		if t := &l.toks[i]; !(t.tok == token.SEMICOLON && t.lit == "\n") {
			return t
		}
	}
	return nil
}

// continues reports whether a cell ending in t needs more text.
func continues(t token.Token) bool {
	if t.IsOperator() {
		switch t {
		case token.RPAREN, token.RBRACK, token.RBRACE, token.SEMICOLON, token.INC, token.DEC, token.ELLIPSIS:
			return false
		}
		return true
	}
	return false
}

// stripMagics blanks lines that start with % or ! (IPython-style magics and
// shell escapes, which the engine handles before Go sees the cell). A cell
// magic (first line "%%...") makes the whole cell non-Go.
func stripMagics(code string) string {
	if strings.HasPrefix(strings.TrimLeft(code, " \t\r\n"), "%%") {
		return ""
	}
	lines := strings.Split(code, "\n")
	for i, line := range lines {
		t := strings.TrimLeft(line, " \t")
		if strings.HasPrefix(t, "%") || strings.HasPrefix(t, "!") {
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}

// isHelpRequest reports whether code is "name?", "name??" or "?name" with
// name an identifier or a dotted selector.
func isHelpRequest(code string) bool {
	name, _, ok := helpTarget(code)
	return ok && name != ""
}

// helpTarget parses a help request: the name and whether detail (??) was
// asked.
func helpTarget(code string) (name string, detail int, ok bool) {
	s := strings.TrimSpace(code)
	switch {
	case strings.HasSuffix(s, "??"):
		s, detail = strings.TrimSuffix(s, "??"), 1
	case strings.HasSuffix(s, "?"):
		s = strings.TrimSuffix(s, "?")
	case strings.HasPrefix(s, "??"):
		s, detail = strings.TrimPrefix(s, "??"), 1
	case strings.HasPrefix(s, "?"):
		s = strings.TrimPrefix(s, "?")
	default:
		return "", 0, false
	}
	s = strings.TrimSpace(s)
	for _, part := range strings.Split(s, ".") {
		if !isIdent(part) && !(part != "" && isIdentLike(part)) {
			return "", 0, false
		}
	}
	return s, detail, true
}

// isIdentLike accepts identifiers and keywords (help on "func" is fine).
func isIdentLike(s string) bool {
	for i, r := range s {
		if !isIdentRune(r) || (i == 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}
