package complete

import (
	"go/ast"
	"go/token"
	"go/types"
	"sort"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/frontend"
)

// description is what inspection and help show about a name.
type description struct {
	signature string // Go declaration, possibly several lines
	doc       string // doc comment text (go/doc syntax)
	source    string // full source, shown at detail 1
	extra     string // preformatted text shown after the doc (package index)
}

func (d description) text(detail int) string {
	var b strings.Builder
	b.WriteString(d.signature)
	if t := docText(d.doc); t != "" {
		b.WriteString("\n\n")
		b.WriteString(t)
	}
	if d.extra != "" {
		b.WriteString("\n\n")
		b.WriteString(d.extra)
	}
	if detail > 0 && d.source != "" && d.source != d.signature {
		b.WriteString("\n\nSource:\n")
		b.WriteString(d.source)
	}
	return b.String()
}

func (d description) markdown(detail int) string {
	var b strings.Builder
	b.WriteString("```go\n" + d.signature + "\n```")
	if md := docMarkdown(d.doc); md != "" {
		b.WriteString("\n\n" + md)
	}
	if d.extra != "" {
		b.WriteString("\n\n```go\n" + d.extra + "\n```")
	}
	if detail > 0 && d.source != "" && d.source != d.signature {
		b.WriteString("\n\nSource:\n\n```go\n" + d.source + "\n```")
	}
	return b.String()
}

// Inspect answers an inspect_request: it describes the identifier or
// selector at or just before cursor (in code points) or, when the cursor is
// elsewhere inside a call's parentheses, the function called, as in
// "fmt.Println(|". Data has text/plain (signature, then doc) and
// text/markdown. detail 1 adds the source: the declaration of cell-defined
// names, and of standard-library functions and types.
func Inspect(code string, cursor int, detail int, scope Scope) (res frontend.Inspection) {
	res = frontend.Inspection{Found: false, Data: frontend.MIMEBundle{}, Metadata: map[string]any{}}
	defer func() {
		if recover() != nil {
			res = frontend.Inspection{Found: false, Data: frontend.MIMEBundle{}, Metadata: map[string]any{}}
		}
	}()
	b := byteOffset(code, cursor)
	s, e := identBefore(code, b), identAfter(code, b)
	if s == e {
		l := lex(code[:b])
		if l.inComment || l.open != "" {
			return res
		}
		open := -1
		for i := len(l.stack) - 1; i >= 0; i-- {
			if l.stack[i].tok == token.LPAREN {
				open = l.stack[i].off
				break
			}
		}
		if open < 0 {
			return res
		}
		e2 := len(strings.TrimRight(code[:open], " \t"))
		s = identBefore(code, e2)
		if s == e2 {
			return res
		}
		d, ok := describeAt(code, s, e2, readScope(scope))
		return inspection(d, ok, detail)
	}
	d, ok := describeAt(code, s, e, readScope(scope))
	return inspection(d, ok, detail)
}

func inspection(d description, ok bool, detail int) frontend.Inspection {
	if !ok {
		return frontend.Inspection{Found: false, Data: frontend.MIMEBundle{}, Metadata: map[string]any{}}
	}
	return frontend.Inspection{Found: true, Data: frontend.MIMEBundle{
		"text/plain":    d.text(detail),
		"text/markdown": d.markdown(detail),
	}, Metadata: map[string]any{}}
}

// Help returns the pager text for "name?" (detail 0) or "name??" (detail
// 1): name is an identifier or a dotted selector, such as "strings.Split",
// "fmt", "strings.Builder.WriteString", a name declared by an earlier cell,
// or a builtin. For a package it gives the package doc and an index of its
// exported names.
func Help(name string, detail int, scope Scope) (text string, found bool) {
	defer func() {
		if recover() != nil {
			text, found = "", false
		}
	}()
	name = strings.TrimSpace(name)
	if n, det, ok := helpTarget(name); ok {
		name, detail = n, max(detail, det)
	}
	if name == "" {
		return "", false
	}
	sd := readScope(scope)
	if strings.Contains(name, "/") {
		// An import path.
		if _, ok := importablePaths(sd.symbols)[name]; !ok {
			return "", false
		}
		api := loadAPI(name, sd.symbols)
		if api == nil {
			return "", false
		}
		return packageDescription(api).text(detail), true
	}
	d, ok := describeAt(name, identBefore(name, len(name)), len(name), sd)
	if !ok {
		return "", false
	}
	return d.text(detail), true
}

// describeAt describes the identifier code[s:e], qualified by the selector
// operand before it, if any.
func describeAt(code string, s, e int, sd scopeData) (description, bool) {
	name := code[s:e]
	if name == "" {
		return description{}, false
	}
	p, _ := prepare(code, len(code), "", "")
	if s > 0 && code[s-1] == '.' {
		opStart := operandStart(code, s-1)
		if opStart == s-1 {
			return description{}, false
		}
		x := code[opStart : s-1]
		if ip, ok := packageOperand(x, p, sd); ok {
			api := loadAPI(ip, sd.symbols)
			if api == nil {
				return description{}, false
			}
			return memberDescription(api, name)
		}
		if api, typ, ok := qualifiedType(x, p, sd); ok {
			return memberDescription(api, typ+"."+name)
		}
		return typedDescription(code, s, e, sd)
	}
	// A name declared in this cell.
	var best *localDecl
	for _, d := range p.locals() {
		if d.name == name && (best == nil || d.off <= s) {
			d := d
			best = &d
		}
	}
	if best != nil {
		if best.kind == "var" || best.kind == "const" {
			if d, ok := typedDescription(code, s, e, sd); ok {
				d.source = nodeSource(p, best.node)
				return d, true
			}
		}
		return localDescription(p, *best), true
	}
	if d, ok := sd.decl(name); ok {
		desc := description{signature: d.Signature, doc: d.Doc, source: d.Source}
		if desc.signature == "" {
			desc.signature = oneLine(d.Source)
		}
		if d.Kind == "var" && !sigHasType(d.Signature) {
			if td, ok := typedDescription(code, s, e, sd); ok {
				desc.signature = td.signature
			}
		}
		return desc, true
	}
	if ip, ok := packageOperand(name, p, sd); ok {
		if api := loadAPI(ip, sd.symbols); api != nil {
			return packageDescription(api), true
		}
	}
	if isBuiltin(name) {
		if api := loadAPI("builtin", nil); api != nil {
			if d, ok := memberDescription(api, name); ok {
				return d, true
			}
		}
		return description{signature: name + " (builtin)"}, true
	}
	return description{}, false
}

// memberDescription describes a package member or "T.M" method.
func memberDescription(api *pkgAPI, key string) (description, bool) {
	m := api.byName[key]
	if m == nil {
		return description{}, false
	}
	d := description{signature: m.Decl, doc: m.Doc}
	if d.signature == "" {
		d.signature = m.Signature
	}
	if api.Path != "builtin" {
		d.signature = "package " + api.Name + " // import " + strconv.Quote(api.Path) + "\n\n" + d.signature
	}
	if m.Kind == "type" {
		var idx []string
		for _, mm := range api.methods[m.Name] {
			idx = append(idx, mm.Signature)
		}
		d.extra = strings.Join(idx, "\n")
	}
	d.source = m.source()
	return d, true
}

// packageDescription is the package doc with an index of exported names.
func packageDescription(api *pkgAPI) description {
	d := description{signature: "package " + api.Name + " // import " + strconv.Quote(api.Path), doc: api.Doc}
	var idx []string
	for _, m := range api.Members {
		idx = append(idx, m.Signature)
	}
	sort.SliceStable(idx, func(i, j int) bool { return kindOrder(idx[i]) < kindOrder(idx[j]) })
	d.extra = strings.Join(idx, "\n")
	return d
}

func kindOrder(sig string) int {
	for i, p := range []string{"const ", "var ", "func ", "type "} {
		if strings.HasPrefix(sig, p) {
			return i
		}
	}
	return 4
}

// localDescription describes a name declared in the cell being edited.
func localDescription(p *cellParse, d localDecl) description {
	desc := description{signature: localSignature(p, d), source: nodeSource(p, d.node)}
	switch n := d.node.(type) {
	case *ast.FuncDecl:
		if n.Doc != nil {
			desc.doc = n.Doc.Text()
		}
	case *ast.TypeSpec:
		if n.Doc != nil {
			desc.doc = n.Doc.Text()
		}
		desc.signature = "type " + nodeString(p.fset, &ast.TypeSpec{Name: n.Name, TypeParams: n.TypeParams, Assign: n.Assign, Type: n.Type})
		for _, dd := range p.decl.Decls {
			if gd, ok := dd.(*ast.GenDecl); ok && desc.doc == "" && gd.Doc != nil {
				for _, sp := range gd.Specs {
					if sp == n {
						desc.doc = gd.Doc.Text()
					}
				}
			}
		}
	case *ast.GenDecl:
		if n.Doc != nil {
			desc.doc = n.Doc.Text()
		}
	}
	return desc
}

// nodeSource returns the cell text of a declaring node.
func nodeSource(p *cellParse, n ast.Node) string {
	if n == nil {
		return ""
	}
	s, e := p.offset(n.Pos()), p.offset(n.End())
	if s < 0 || e > len(p.src) || s >= e {
		return ""
	}
	return p.src[s:e]
}

// typedDescription describes the identifier at code[s:e] through go/types.
func typedDescription(code string, s, e int, sd scopeData) (description, bool) {
	text := code[:e]
	l := lex(text)
	if l.open != "" {
		return description{}, false
	}
	c := typeCheck(text+closers(l.stack), sd)
	if c == nil {
		return description{}, false
	}
	o := c.object(s)
	if o == nil {
		return description{}, false
	}
	d := description{signature: types.ObjectString(o, qualifier(c.pkg))}
	key := o.Name()
	if f, ok := o.(*types.Func); ok {
		if sig, ok := f.Type().(*types.Signature); ok && sig.Recv() != nil {
			if n := namedOf(sig.Recv().Type()); n != "" {
				key = n + "." + key
			}
		}
	}
	switch {
	case o.Pkg() == nil:
	case o.Pkg() == c.pkg:
		// Declared by an earlier cell: its logged doc and source.
		if sd, ok := sd.decl(key); ok && c.inScopeFile(o.Pos()) {
			d.doc, d.source = sd.Doc, sd.Source
		}
	default:
		if api := loadAPI(o.Pkg().Path(), sd.symbols); api != nil {
			if m := api.byName[key]; m != nil {
				d.doc = m.Doc
				d.source = m.source()
			}
		}
	}
	return d, true
}

func namedOf(t types.Type) string {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := t.(*types.Named); ok {
		return n.Obj().Name()
	}
	return ""
}
