package gen

import (
	"go/ast"
	"go/token"
	"sort"
	"strconv"
	"strings"
)

// editor rewrites a cell by editing the text its AST was parsed from, so
// that the generated code keeps the cell's lines: positions in compile
// errors and panics stay the cell's own.
type editor struct {
	fset  *token.FileSet
	text  func(*token.File) string
	edits map[*token.File][]*edit
	seq   int
}

// edit replaces text[start:end] (an insertion when start == end) with what
// fn returns when the text is rendered.
type edit struct {
	start, end int
	seq        int
	fn         func() string
}

func newEditor(fset *token.FileSet, text func(*token.File) string) *editor {
	return &editor{fset: fset, text: text, edits: map[*token.File][]*edit{}}
}

func (ed *editor) add(from, to token.Pos, fn func() string) {
	tf := ed.fset.File(from)
	if tf == nil {
		return
	}
	ed.seq++
	ed.edits[tf] = append(ed.edits[tf], &edit{start: tf.Offset(from), end: tf.Offset(to), seq: ed.seq, fn: fn})
}

// replace replaces node n by what fn returns.
func (ed *editor) replace(n ast.Node, fn func() string) { ed.add(n.Pos(), n.End(), fn) }

// replaceText replaces node n by s.
func (ed *editor) replaceText(n ast.Node, s string) { ed.replace(n, func() string { return s }) }

// insert inserts s at pos.
func (ed *editor) insert(pos token.Pos, s string) { ed.add(pos, pos, func() string { return s }) }

// render returns the text of n with the edits inside it applied.
func (ed *editor) render(n ast.Node) string { return ed.renderRange(n.Pos(), n.End()) }

// renderRange returns the text between from and to with the edits inside
// applied; an edit nested in another is the outer one's business.
func (ed *editor) renderRange(from, to token.Pos) string {
	tf := ed.fset.File(from)
	if tf == nil {
		return ""
	}
	text := ed.text(tf)
	a, b := tf.Offset(from), tf.Offset(to)
	if a < 0 || b > len(text) || a > b {
		return ""
	}
	list := ed.edits[tf]
	var in []*edit
	for _, e := range list {
		if e.start >= a && e.end <= b && !(e.start == e.end && (e.start == b && b != a)) {
			in = append(in, e)
		}
	}
	// Outermost first: by start, longer first, insertions before
	// replacements at the same place, then in the order they were made.
	sort.SliceStable(in, func(i, j int) bool {
		x, y := in[i], in[j]
		if x.start != y.start {
			return x.start < y.start
		}
		if (x.end == x.start) != (y.end == y.start) {
			return x.end == x.start
		}
		if x.end != y.end {
			return x.end > y.end
		}
		return x.seq < y.seq
	})
	var out strings.Builder
	pos := a
	for _, e := range in {
		if e.start < pos {
			continue // inside an edit already applied
		}
		out.WriteString(text[pos:e.start])
		out.WriteString(e.fn())
		pos = e.end
	}
	out.WriteString(text[pos:b])
	return out.String()
}

// lineDirective is a //line comment that gives the next line the position
// of pos.
func (ed *editor) lineDirective(pos token.Pos) string {
	p := ed.fset.Position(pos)
	if !p.IsValid() {
		return ""
	}
	return "//line " + p.Filename + ":" + strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Column) + "\n"
}

// inlineDirective is a /*line*/ comment giving the text that follows it
// the position of pos.
func (ed *editor) inlineDirective(pos token.Pos) string {
	p := ed.fset.Position(pos)
	if !p.IsValid() {
		return ""
	}
	return "/*line " + p.Filename + ":" + strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Column) + "*/"
}

// lines counts the line breaks in the source extent of n.
func (ed *editor) lines(from, to token.Pos) int {
	return ed.fset.Position(to).Line - ed.fset.Position(from).Line
}
