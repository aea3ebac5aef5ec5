package check

import (
	"fmt"
	"go/token"
	"sort"
	"strings"
)

// Diag is one message about a cell, at a position in cell coordinates
// (Pos.Filename is "cell[N]").
type Diag struct {
	Pos    token.Position
	Msg    string
	Syntax bool // a syntax error (from the parser)
}

func (d Diag) String() string {
	if d.Pos.IsValid() {
		return fmt.Sprintf("%s:%d:%d: %s", d.Pos.Filename, d.Pos.Line, d.Pos.Column, d.Msg)
	}
	return d.Msg
}

// Error is a cell that Go rejects: every message, sorted by position.
type Error struct {
	Cell  int
	Diags []Diag
	// Note adds what the messages alone do not say (for instance which
	// earlier declarations were being recompiled).
	Note string
	src  string // the checked cell's source
}

func (e *Error) Error() string {
	if len(e.Diags) == 0 {
		return e.Note
	}
	return e.Diags[0].String()
}

// Lines renders the messages the way the Go compiler prints them, each
// followed by its source line and a caret under the column. source returns
// the text of cell n.
func (e *Error) Lines(source func(n int) string) []string {
	var out []string
	for _, d := range e.Diags {
		out = append(out, d.String())
		if !d.Pos.IsValid() {
			continue
		}
		var n int
		if _, err := fmt.Sscanf(d.Pos.Filename, "cell[%d]", &n); err != nil {
			continue
		}
		text := e.src
		if n != e.Cell && source != nil {
			text = source(n)
		}
		out = append(out, SourceLines(text, d.Pos.Line, d.Pos.Column)...)
	}
	if e.Note != "" {
		out = append(out, e.Note)
	}
	return out
}

// SourceLines returns line `line` of src and a caret under column col (in
// bytes, as Go counts columns), or nothing if the line does not exist.
func SourceLines(src string, line, col int) []string {
	lines := strings.Split(src, "\n")
	if line < 1 || line > len(lines) {
		return nil
	}
	l := strings.TrimRight(lines[line-1], "\r")
	if col < 1 {
		col = 1
	}
	// The caret sits under the column: tabs stay tabs so it lines up.
	var pad strings.Builder
	for i := 0; i < col-1 && i < len(l); i++ {
		if l[i] == '\t' {
			pad.WriteByte('\t')
		} else if l[i]&0xC0 != 0x80 { // one space per rune, not per byte
			pad.WriteByte(' ')
		}
	}
	return []string{"    " + l, "    " + pad.String() + "^"}
}

func sortDiags(ds []Diag) {
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i].Pos, ds[j].Pos
		if a.Filename != b.Filename {
			// The checked cell's messages come first, then earlier cells'.
			return cellNumber(a.Filename) > cellNumber(b.Filename)
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
}

func cellNumber(name string) int {
	var n int
	if _, err := fmt.Sscanf(name, "cell[%d]", &n); err != nil {
		return -1
	}
	return n
}
