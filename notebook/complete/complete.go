package complete

import (
	"go/ast"
	"go/token"
	"go/types"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/frontend"
)

// candidate is one possible completion.
type candidate struct {
	name, kind, signature string
}

// jupyterType maps our kinds to the "type" field of
// _jupyter_types_experimental (the names IPython uses).
func jupyterType(kind string) string {
	switch kind {
	case "package":
		return "module"
	case "func", "method", "builtin":
		return "function"
	case "type":
		return "class"
	case "var", "const":
		return "instance"
	case "field":
		return "property"
	case "keyword":
		return "keyword"
	case "path":
		return "path"
	}
	return "statement"
}

var keywords = func() []string {
	var out []string
	for t := token.BREAK; t <= token.VAR; t++ {
		if t.IsKeyword() {
			out = append(out, t.String())
		}
	}
	return out
}()

// builtins are the predeclared identifiers.
var builtins = []string{
	"any", "append", "bool", "byte", "cap", "clear", "close", "comparable",
	"complex", "complex128", "complex64", "copy", "delete", "error", "false",
	"float32", "float64", "imag", "int", "int16", "int32", "int64", "int8",
	"iota", "len", "make", "max", "min", "new", "nil", "panic", "print",
	"println", "real", "recover", "rune", "string", "true", "uint", "uint16",
	"uint32", "uint64", "uint8", "uintptr",
}

func isBuiltin(name string) bool {
	i := sort.SearchStrings(builtins, name)
	return i < len(builtins) && builtins[i] == name
}

// Complete answers a complete_request for code with the cursor at cursor
// (in code points). Matches are bare names that replace
// [CursorStart, CursorEnd): the identifier around the cursor, or the empty
// span just after a dot. See the package documentation for the convention.
//
// Offered: after "pkg." the exported members of the package (imported by
// an earlier cell or this one, or importable and not shadowed); after "x."
// the fields and methods of x's type when go/types can work it out;
// elsewhere names declared in this cell and earlier cells, imported
// packages, importable package names, keywords and builtins; inside an
// import string, import paths. Metadata holds
// "_jupyter_types_experimental": one {start, end, text, type, signature}
// per match.
func Complete(code string, cursor int, scope Scope) (res frontend.Completion) {
	res = frontend.Completion{Matches: []string{}, CursorStart: cursor, CursorEnd: cursor, Metadata: map[string]any{}}
	defer func() {
		if recover() != nil {
			res.Matches = []string{}
			res.Metadata = map[string]any{}
		}
	}()
	b := byteOffset(code, cursor)
	res.CursorStart, res.CursorEnd = runeOffset(code, b), runeOffset(code, b)
	sd := readScope(scope)
	l := lex(code[:b])
	if l.inComment || l.open == "rune" || l.open == "comment" {
		return res
	}
	if l.open == "string" || l.open == "raw" {
		if !inImport(l) {
			return res
		}
		start := l.openOff + 1
		prefix := code[start:b]
		var cands []candidate
		for p := range importablePaths(sd.symbols) {
			cands = append(cands, candidate{p, "path", "import " + strconv.Quote(p)})
		}
		return finish(res, code, start, b, prefix, cands)
	}
	start := identBefore(code, b)
	end := identAfter(code, b)
	prefix := code[start:b]
	if prefix != "" && prefix[0] >= '0' && prefix[0] <= '9' {
		return res
	}
	if start > 0 && code[start-1] == '.' {
		return finish(res, code, start, end, prefix, memberCandidates(code, start, sd))
	}
	return finish(res, code, start, end, prefix, nameCandidates(code, start, sd))
}

// finish filters candidates by prefix (case-sensitive matches first, then
// case-insensitive ones) and fills res.
func finish(res frontend.Completion, code string, start, end int, prefix string, cands []candidate) frontend.Completion {
	seen := map[string]bool{}
	var exact, folded []candidate
	lower := strings.ToLower(prefix)
	for _, c := range cands {
		if seen[c.name] {
			continue
		}
		switch {
		case strings.HasPrefix(c.name, prefix):
			exact = append(exact, c)
		case strings.HasPrefix(strings.ToLower(c.name), lower):
			folded = append(folded, c)
		default:
			continue
		}
		seen[c.name] = true
	}
	byName := func(s []candidate) {
		sort.SliceStable(s, func(i, j int) bool { return s[i].name < s[j].name })
	}
	byName(exact)
	byName(folded)
	res.CursorStart, res.CursorEnd = runeOffset(code, start), runeOffset(code, end)
	var meta []any
	for _, c := range append(exact, folded...) {
		res.Matches = append(res.Matches, c.name)
		meta = append(meta, map[string]any{
			"start": res.CursorStart, "end": res.CursorEnd, "text": c.name,
			"type": jupyterType(c.kind), "signature": c.signature,
		})
	}
	if meta == nil {
		meta = []any{}
	}
	res.Metadata["_jupyter_types_experimental"] = meta
	return res
}

// inImport reports whether a source that ends inside a string literal is
// in an import declaration.
func inImport(l *lexed) bool {
	toks := l.toks
	n := len(toks)
	if n > 0 && toks[n-1].tok == token.SEMICOLON && toks[n-1].lit == "\n" {
		n--
	}
	if n > 0 && toks[n-1].tok == token.STRING {
		n-- // the unterminated literal itself
		toks = toks[:n]
	}
	if n > 0 && toks[n-1].tok == token.IMPORT {
		return true
	}
	if n > 1 && toks[n-1].tok == token.IDENT && toks[n-2].tok == token.IMPORT {
		return true
	}
	// Inside "import ( ... )".
	if k := len(l.stack); k > 0 && l.stack[k-1].tok == token.LPAREN {
		for i := n - 1; i > 0; i-- {
			if toks[i].off == l.stack[k-1].off {
				return toks[i-1].tok == token.IMPORT
			}
		}
	}
	return false
}

// nameCandidates lists everything an identifier at start could be.
func nameCandidates(code string, start int, sd scopeData) []candidate {
	var cands []candidate
	p, _ := prepare(code, start, "", "")
	for _, d := range p.locals() {
		if d.off < start {
			cands = append(cands, candidate{d.name, d.kind, localSignature(p, d)})
		}
	}
	for i := len(sd.decls) - 1; i >= 0; i-- {
		d := sd.decls[i]
		if strings.Contains(d.Name, ".") {
			continue // a method
		}
		sig := d.Signature
		if sig == "" {
			sig = oneLine(d.Source)
		}
		cands = append(cands, candidate{d.Name, d.Kind, sig})
	}
	for name, path := range cellImports(p, sd) {
		cands = append(cands, candidate{name, "package", "package " + name + " // import " + strconv.Quote(path)})
	}
	names := map[string]string{}
	for p, n := range importablePaths(sd.symbols) {
		if old, ok := names[n]; !ok || preferPath(p, old, n) {
			names[n] = p
		}
	}
	for n, p := range names {
		cands = append(cands, candidate{n, "package", "package " + n + " // import " + strconv.Quote(p)})
	}
	for _, k := range keywords {
		cands = append(cands, candidate{k, "keyword", k})
	}
	bapi := loadAPI("builtin", nil)
	for _, n := range builtins {
		sig := n
		kind := "builtin"
		if bapi != nil {
			if m := bapi.byName[n]; m != nil {
				sig = m.Signature
				if m.Kind != "func" {
					kind = m.Kind
				}
			}
		}
		cands = append(cands, candidate{n, kind, sig})
	}
	return cands
}

// preferPath picks between two import paths for package name n: the one
// equal to n, else the shorter, else the smaller.
func preferPath(p, old, n string) bool {
	if (p == n) != (old == n) {
		return p == n
	}
	if len(p) != len(old) {
		return len(p) < len(old)
	}
	return p < old
}

// cellImports maps local names to paths for the scope's imports and the
// cell's own import declarations.
func cellImports(p *cellParse, sd scopeData) map[string]string {
	m := map[string]string{}
	for k, v := range sd.imports {
		m[k] = v
	}
	if p == nil || p.decl == nil {
		return m
	}
	for _, is := range p.decl.Imports {
		ip, err := strconv.Unquote(is.Path.Value)
		if err != nil {
			continue
		}
		name := ""
		if is.Name != nil {
			name = is.Name.Name
		} else if n, ok := importablePaths(sd.symbols)[ip]; ok {
			name = n
		} else {
			name = path.Base(ip)
		}
		if name != "_" && name != "." {
			m[name] = ip
		}
	}
	return m
}

// localSignature describes a name declared in the cell.
func localSignature(p *cellParse, d localDecl) string {
	switch n := d.node.(type) {
	case *ast.FuncDecl:
		cp := *n
		cp.Body, cp.Doc = nil, nil
		return oneLine(nodeString(p.fset, &cp))
	case *ast.TypeSpec:
		return typeSignature(p.fset, n)
	case *ast.GenDecl:
		return oneLine(nodeString(p.fset, n))
	case *ast.AssignStmt:
		return oneLine(nodeString(p.fset, n))
	}
	return d.kind + " " + d.name
}

// operandStart scans back from the dot at off over a selector operand:
// identifiers, dots, and balanced (...) and [...] groups.
func operandStart(code string, dot int) int {
	i := dot
	for i > 0 {
		j := identBefore(code, i)
		if j < i {
			i = j
			if i > 0 && code[i-1] == '.' {
				i--
				continue
			}
			return i
		}
		c := code[i-1]
		if c != ')' && c != ']' {
			return i
		}
		depth := 0
		for i > 0 {
			i--
			switch code[i] {
			case ')', ']', '}':
				depth++
			case '(', '[', '{':
				depth--
			}
			if depth == 0 {
				break
			}
		}
		if depth != 0 {
			return dot
		}
	}
	return i
}

// packageOperand resolves "X" in "X." to an import path when X names a
// package that no local or scope declaration shadows.
func packageOperand(x string, p *cellParse, sd scopeData) (string, bool) {
	if !isIdent(x) {
		return "", false
	}
	if p != nil {
		for _, d := range p.locals() {
			if d.name == x {
				return "", false
			}
		}
	}
	if _, ok := sd.decl(x); ok {
		return "", false
	}
	if ip, ok := cellImports(p, sd)[x]; ok {
		return ip, true
	}
	best := ""
	for ip, n := range importablePaths(sd.symbols) {
		if n == x && (best == "" || preferPath(ip, best, x)) {
			best = ip
		}
	}
	return best, best != ""
}

// memberCandidates lists what can follow the dot before start.
func memberCandidates(code string, start int, sd scopeData) []candidate {
	dot := start - 1
	opStart := operandStart(code, dot)
	if opStart == dot {
		return nil
	}
	x := code[opStart:dot]
	p, _ := prepare(code, start, "", "")
	if ip, ok := packageOperand(x, p, sd); ok {
		return packageMembers(ip, sd)
	}
	if api, typ, ok := qualifiedType(x, p, sd); ok {
		// "pkg.Type." lists method expressions.
		var cands []candidate
		for _, m := range api.methods[typ] {
			cands = append(cands, candidate{m.Name, "method", m.Signature})
		}
		return cands
	}
	t, isType, c := operandTypeOf(code, start, opStart, sd)
	if t == nil {
		return nil
	}
	var cands []candidate
	q := qualifier(c.pkg)
	for _, o := range selectable(t, isType, c.pkg) {
		kind := "method"
		if _, ok := o.(*types.Var); ok {
			kind = "field"
		}
		cands = append(cands, candidate{o.Name(), kind, types.ObjectString(o, q)})
	}
	return cands
}

// qualifiedType resolves "pkg.T" to a package API and type name.
func qualifiedType(x string, p *cellParse, sd scopeData) (*pkgAPI, string, bool) {
	i := strings.IndexByte(x, '.')
	if i < 0 || strings.Count(x, ".") != 1 {
		return nil, "", false
	}
	ip, ok := packageOperand(x[:i], p, sd)
	if !ok {
		return nil, "", false
	}
	api := loadAPI(ip, sd.symbols)
	if api == nil {
		return nil, "", false
	}
	if m := api.byName[x[i+1:]]; m != nil && m.Kind == "type" {
		return api, m.Name, true
	}
	return nil, "", false
}

// packageMembers lists a package's exported names.
func packageMembers(ip string, sd scopeData) []candidate {
	api := loadAPI(ip, sd.symbols)
	if api == nil {
		return nil
	}
	cands := make([]candidate, 0, len(api.Members))
	for _, m := range api.Members {
		cands = append(cands, candidate{m.Name, m.Kind, m.Signature})
	}
	return cands
}

// operandTypeOf type-checks the cell to find the type of the operand of the
// selector whose name starts at start. It first checks the cell up to the
// cursor with brackets closed; if that does not give a type (the statement
// around the cursor is broken), it replaces the current line with
// "_ = operand._".
func operandTypeOf(code string, start, opStart int, sd scopeData) (types.Type, bool, *checked) {
	text := code[:start] + "_"
	if l := lex(text); l.open == "" {
		text += closers(l.stack)
	}
	if c := typeCheck(text, sd); c != nil {
		if t, isType := c.operandType(start); t != nil {
			return t, isType, c
		}
	}
	ls := lineStart(code, opStart)
	head := code[:ls]
	l := lex(head)
	if l.open != "" {
		return nil, false, nil
	}
	stmt := "_ = " + code[opStart:start]
	text = head + stmt + "_" + closers(l.stack)
	if c := typeCheck(text, sd); c != nil {
		if t, isType := c.operandType(len(head) + len(stmt)); t != nil {
			return t, isType, c
		}
	}
	return nil, false, nil
}
