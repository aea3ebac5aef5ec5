package complete

import (
	"go/scanner"
	"go/token"
	"strings"
	"unicode"
	"unicode/utf8"
)

// byteOffset converts a cursor in code points to a byte offset in code,
// clamped to [0, len(code)]. Invalid UTF-8 bytes count one code point each.
func byteOffset(code string, cursor int) int {
	if cursor <= 0 {
		return 0
	}
	n := 0
	for i := 0; i < len(code); {
		if n == cursor {
			return i
		}
		_, w := utf8.DecodeRuneInString(code[i:])
		i += w
		n++
	}
	return len(code)
}

// runeOffset converts a byte offset in code to code points.
func runeOffset(code string, off int) int {
	if off > len(code) {
		off = len(code)
	}
	n := 0
	for i := 0; i < off; {
		_, w := utf8.DecodeRuneInString(code[i:])
		i += w
		n++
	}
	return n
}

func isIdentRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// identBefore returns the start of the identifier characters ending at off.
func identBefore(code string, off int) int {
	for off > 0 {
		r, w := utf8.DecodeLastRuneInString(code[:off])
		if !isIdentRune(r) {
			break
		}
		off -= w
	}
	return off
}

// identAfter returns the end of the identifier characters starting at off.
func identAfter(code string, off int) int {
	for off < len(code) {
		r, w := utf8.DecodeRuneInString(code[off:])
		if !isIdentRune(r) {
			break
		}
		off += w
	}
	return off
}

// isIdent reports whether s is a (non-blank) Go identifier.
func isIdent(s string) bool {
	if s == "" || s == "_" {
		return false
	}
	for i, r := range s {
		if !isIdentRune(r) || (i == 0 && unicode.IsDigit(r)) {
			return false
		}
	}
	return !token.Lookup(s).IsKeyword()
}

// tok is one token of a lexed source.
type tok struct {
	off int // byte offset
	end int // byte offset just past the token
	tok token.Token
	lit string
}

// opener is an unclosed bracket.
type opener struct {
	tok token.Token // LPAREN, LBRACK or LBRACE
	off int
}

// lexed is the result of scanning a source with go/scanner.
type lexed struct {
	toks  []tok    // without comments; includes automatic semicolons
	stack []opener // brackets still open at the end
	// open is non-empty when the source ends inside a literal or comment:
	// "string", "raw", "rune" or "comment".
	open    string
	openOff int
	// badOff >= 0 is the offset of the first error that appending text
	// cannot fix: a stray or mismatched closing bracket, an illegal
	// character, a string or rune literal broken by a newline.
	badOff int
	badMsg string
	// inComment reports that the end of the source is inside a comment.
	inComment bool
}

var closerOf = map[token.Token]token.Token{token.LPAREN: token.RPAREN, token.LBRACK: token.RBRACK, token.LBRACE: token.RBRACE}

// lex scans src, tracking brackets and unterminated literals.
func lex(src string) *lexed {
	l := &lexed{badOff: -1}
	fset := token.NewFileSet()
	file := fset.AddFile("", -1, len(src))
	type serr struct {
		off int
		msg string
	}
	var errs []serr
	var s scanner.Scanner
	s.Init(file, []byte(src), func(pos token.Position, msg string) {
		errs = append(errs, serr{pos.Offset, msg})
	}, scanner.ScanComments)
	var lastComment *tok
	for {
		pos, t, lit := s.Scan()
		if t == token.EOF {
			break
		}
		off := file.Offset(pos)
		end := off + len(lit)
		if lit == "" || (t == token.SEMICOLON && lit == "\n") {
			end = off + len(t.String())
			if t == token.SEMICOLON {
				end = off
			}
		}
		if t == token.COMMENT {
			lastComment = &tok{off: off, end: end, tok: t, lit: lit}
			continue
		}
		lastComment = nil
		l.toks = append(l.toks, tok{off: off, end: end, tok: t, lit: lit})
		switch t {
		case token.LPAREN, token.LBRACK, token.LBRACE:
			l.stack = append(l.stack, opener{t, off})
		case token.RPAREN, token.RBRACK, token.RBRACE:
			if n := len(l.stack); n > 0 && closerOf[l.stack[n-1].tok] == t {
				l.stack = l.stack[:n-1]
			} else if l.badOff < 0 {
				l.badOff, l.badMsg = off, "unexpected "+t.String()
			}
		case token.ILLEGAL:
			if l.badOff < 0 {
				l.badOff, l.badMsg = off, "illegal character "+lit
			}
		}
	}
	if lastComment != nil && lastComment.end >= len(src) && strings.HasPrefix(lastComment.lit, "//") {
		l.inComment = true
	}
	for _, e := range errs {
		switch {
		case strings.Contains(e.msg, "raw string literal not terminated"):
			l.open, l.openOff = "raw", e.off
		case strings.Contains(e.msg, "comment not terminated"):
			l.open, l.openOff = "comment", e.off
			l.inComment = true
		case strings.Contains(e.msg, "string literal not terminated"),
			strings.Contains(e.msg, "rune literal not terminated"):
			kind := "string"
			if strings.Contains(e.msg, "rune") {
				kind = "rune"
			}
			// An interpreted literal cannot span lines: open only if
			// nothing but the literal follows on its line.
			if strings.Contains(src[e.off:], "\n") {
				if l.badOff < 0 || e.off < l.badOff {
					l.badOff, l.badMsg = e.off, e.msg
				}
			} else {
				l.open, l.openOff = kind, e.off
			}
		default:
			if strings.Contains(e.msg, "illegal") || strings.Contains(e.msg, "invalid") {
				if l.badOff < 0 || e.off < l.badOff {
					l.badOff, l.badMsg = e.off, e.msg
				}
			}
		}
	}
	return l
}

// closers returns the text that closes the brackets in stack, innermost
// first.
func closers(stack []opener) string {
	var b strings.Builder
	for i := len(stack) - 1; i >= 0; i-- {
		switch stack[i].tok {
		case token.LPAREN:
			b.WriteString(")")
		case token.LBRACK:
			b.WriteString("]")
		case token.LBRACE:
			b.WriteString("\n}")
		}
	}
	return b.String()
}

// lineStart returns the offset of the start of the line holding off.
func lineStart(src string, off int) int {
	return strings.LastIndexByte(src[:off], '\n') + 1
}

// leadingSpace returns the indentation of the line holding off.
func leadingSpace(src string, off int) string {
	s := lineStart(src, off)
	e := s
	for e < len(src) && (src[e] == ' ' || src[e] == '\t') {
		e++
	}
	return src[s:e]
}
