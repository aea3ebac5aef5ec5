package export

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"sort"
	"strings"

	"github.com/goaccel/goaccel/notebook/check"
	"github.com/goaccel/goaccel/notebook/gonb"
)

// exporter holds an export in progress: the session the cells are checked
// in, the program symbols their bindings map to, and each cell's pieces.
// Names are decided when the program is rendered (a later cell may rename
// an earlier declaration), so pieces are closures.
type exporter struct {
	s       *check.Session
	cells   []*cellOut
	notes   []string
	special map[string]bool // "_ path" and ". path" imports
	syms    map[*check.Entry]*symbol
	order   []*symbol
	kept    map[*types.Var]bool // variables initialized at package level
	// needShell: a ! line is carried; shellName is the helper running it.
	needShell bool
	shellName string

	// Set while rendering.
	imports  map[string]string // import path → the program's name for it
	pkgNames map[string]string // import path → the package's name
	taken    map[string]bool   // package-level names of the program
}

// symbol is one package-level name of the program. Bindings the kernel
// treats as one (a variable redefined with the same type keeps its
// storage; a function redefined with the same signature is bound late)
// share a symbol.
type symbol struct {
	base string
	cell int
	kind check.Kind
	// funcVar: a function redefined compatibly; the symbol is a variable
	// holding the current body, each body a function of its own.
	funcVar  bool
	sig      *types.Signature
	versions map[*check.Entry]string
	declared bool // a variable's declaration is emitted
	name     string
}

// cellOut is what one cell contributes, in program order.
type cellOut struct {
	n         int
	comments  []string
	commands  []func() string
	decls     []func() string // package-level declarations
	vars      []func() string // package-level variable declarations
	funcs     []*check.Entry  // functions declared (late-bound ones are assigned)
	inits     []func() string // variable initializers, in Go's order
	initFuncs []func() string
	stmts     []func() string
	main      *gonb.Main
}

func newExporter(s *check.Session) *exporter {
	return &exporter{s: s, special: map[string]bool{}, syms: map[*check.Entry]*symbol{}, pkgNames: map[string]string{}, kept: map[*types.Var]bool{}}
}

// bind maps the bindings a committed cell made to program symbols.
func (x *exporter) bind(c *check.Cell, bindings []check.Binding) {
	for _, b := range bindings {
		e := b.New
		if e.Kind == check.MethodEntry {
			continue // methods belong to their type's symbol
		}
		// Each func main runs once, at the end of its cell: never late-bound.
		lateBound := e.Kind == check.VarEntry || e.Kind == check.FuncEntry && e.Name != "main"
		if old := x.syms[b.Old]; old != nil && b.Compatible && lateBound {
			x.syms[e] = old
			if e.Kind == check.FuncEntry {
				old.funcVar = true
				old.versions[e] = ""
			}
			continue
		}
		sym := &symbol{base: e.Name, cell: c.N, kind: e.Kind, versions: map[*check.Entry]string{}}
		if e.Kind == check.FuncEntry {
			sym.sig, _ = e.Obj.Type().(*types.Signature)
			sym.versions[e] = ""
		}
		x.syms[e] = sym
		x.order = append(x.order, sym)
	}
}

// entry is the session entry obj (seen in cell c) is, or nil for what is
// not a package-level binding of the notebook.
func (x *exporter) entry(c *check.Cell, obj types.Object) *check.Entry {
	if e := c.EntryOf(obj); e != nil {
		return e
	}
	if obj == nil || obj.Pkg() != c.Pkg || obj.Parent() == nil || obj.Parent().Parent() != types.Universe {
		return nil
	}
	return x.s.EntryOf(obj)
}

// symbolOf is the program symbol of a binding (nil for methods and for
// what is not a binding).
func (x *exporter) symbolOf(c *check.Cell, obj types.Object) (*check.Entry, *symbol) {
	e := x.entry(c, obj)
	if e == nil {
		return nil, nil
	}
	return e, x.syms[e]
}

// identName returns what identifier id of cell c is called in the
// program, or nil to keep it.
func (x *exporter) identName(c *check.Cell, id *ast.Ident) func() string {
	if obj := c.Info.Defs[id]; obj != nil {
		if _, ok := obj.(*types.PkgName); ok {
			return nil
		}
		e, sym := x.symbolOf(c, obj)
		if sym == nil {
			return nil
		}
		if e.Kind == check.FuncEntry {
			return func() string {
				if sym.funcVar {
					return sym.versions[e]
				}
				return sym.name
			}
		}
		return func() string { return sym.name }
	}
	obj := c.Info.Uses[id]
	if pn, ok := obj.(*types.PkgName); ok {
		path := pn.Imported().Path()
		x.pkgNames[path] = pn.Imported().Name()
		return func() string { return x.importName(path) }
	}
	if _, sym := x.symbolOf(c, obj); sym != nil {
		return func() string { return sym.name }
	}
	return nil
}

// varName is the program's name of package-level variable v.
func (x *exporter) varName(c *check.Cell, v *types.Var) string {
	if v.Name() == "_" {
		return "_"
	}
	if _, sym := x.symbolOf(c, v); sym != nil {
		return sym.name
	}
	return v.Name()
}

// edit replaces text[start:end] with what fn returns at rendering.
type edit struct {
	start, end int
	fn         func() string
}

// node returns the text of n (from cell c's sources) with the program's
// names, rendered when called.
func (x *exporter) node(c *check.Cell, n ast.Node) func() string {
	return x.span(c, n.Pos(), n.End(), n)
}

// span returns the text between from and to with the program's names of
// the identifiers in n (nil: find them by position in c's AST).
func (x *exporter) span(c *check.Cell, from, to token.Pos, n ast.Node, more ...edit) func() string {
	tf := c.Fset.File(from)
	if tf == nil {
		return func() string { return "" }
	}
	text := c.Text(tf)
	start, end := tf.Offset(from), tf.Offset(to)
	edits := append([]edit(nil), more...)
	ast.Inspect(n, func(m ast.Node) bool {
		id, ok := m.(*ast.Ident)
		if !ok || !id.Pos().IsValid() || c.Fset.File(id.Pos()) != tf {
			return true
		}
		if fn := x.identName(c, id); fn != nil {
			off := tf.Offset(id.Pos())
			edits = append(edits, edit{off, off + len(id.Name), fn})
		}
		return true
	})
	sort.SliceStable(edits, func(i, j int) bool { return edits[i].start < edits[j].start })
	return func() string {
		var b strings.Builder
		at := start
		for _, ed := range edits {
			if ed.start < at || ed.end > end {
				continue
			}
			b.WriteString(text[at:ed.start])
			b.WriteString(ed.fn())
			at = ed.end
		}
		b.WriteString(text[at:end])
		return b.String()
	}
}

// text is declaration d as cell c wrote it, with the program's names,
// after comment.
func (x *exporter) text(c *check.Cell, d ast.Decl, comment string) func() string {
	return withComment(comment, x.node(c, d))
}

// spanText is a statement span of c as written (a const declaration among
// the statements).
func (x *exporter) spanText(c *check.Cell, sp check.Span, comment string) func() string {
	var n ast.Node
	for _, d := range c.File.Decls {
		if d.Pos() <= sp.Pos && sp.End <= d.End() || sp.Pos <= d.Pos() && d.End() <= sp.End {
			n = d
		}
	}
	if n == nil {
		return func() string { return "" }
	}
	return withComment(comment, x.span(c, sp.Pos, sp.End, n))
}

// funcDecl records a function or method declaration.
func (x *exporter) funcDecl(out *cellOut, c *check.Cell, d *ast.FuncDecl, comment string) {
	switch {
	case d.Recv != nil:
		out.decls = append(out.decls, x.text(c, d, comment))
	case d.Name.Name == "init":
		// An init function runs when its cell runs, after the cell's
		// variables are initialized.
		k := len(out.initFuncs) + 1
		name := fmt.Sprintf("init_cell%d", out.n)
		if k > 1 {
			name = fmt.Sprintf("%s_%d", name, k)
		}
		tf := c.Fset.File(d.Name.Pos())
		off := tf.Offset(d.Name.Pos())
		out.decls = append(out.decls, withComment(comment, x.span(c, d.Pos(), d.End(), d, edit{off, off + len("init"), func() string { return name }})))
		out.initFuncs = append(out.initFuncs, func() string { return name + "()" })
	default:
		out.decls = append(out.decls, x.text(c, d, comment))
		if e, sym := x.symbolOf(c, c.Info.Defs[d.Name]); sym != nil {
			out.funcs = append(out.funcs, e)
		}
	}
}

// varDecl records a package-level var declaration: each variable is
// declared with its type, and its initializer runs in main where the cell
// ran (collect adds the initializers in Go's order).
func (x *exporter) varDecl(out *cellOut, c *check.Cell, d *ast.GenDecl, comment string) {
	for _, sp := range d.Specs {
		vs := sp.(*ast.ValueSpec)
		if x.keepInitializer(out, c, vs, comment) {
			comment = ""
			continue
		}
		for _, id := range vs.Names {
			v, ok := c.Info.Defs[id].(*types.Var)
			if !ok || id.Name == "_" {
				continue
			}
			x.declareVar(out, c, v, vs.Type, comment)
			comment = ""
			if len(vs.Values) == 0 {
				// Declared again without a value: zero, as a new variable is.
				if _, sym := x.symbolOf(c, v); sym != nil && sym.cell != c.N {
					typ := x.typeFunc(c, v.Type(), vs.Type)
					out.inits = append(out.inits, func() string { return sym.name + " = *new(" + typ() + ")" })
				}
			}
		}
	}
}

// keepInitializer keeps a var spec whole at package level when a new
// variable of it has a type the program cannot write (an unexported type
// of another package): it is then initialized before main runs, not where
// its cell ran, which the notes say.
func (x *exporter) keepInitializer(out *cellOut, c *check.Cell, vs *ast.ValueSpec, comment string) bool {
	if vs.Type != nil || len(vs.Values) == 0 {
		return false
	}
	var why error
	for _, id := range vs.Names {
		v, ok := c.Info.Defs[id].(*types.Var)
		if !ok || id.Name == "_" {
			continue
		}
		if _, sym := x.symbolOf(c, v); sym == nil || sym.declared {
			return false
		}
		if _, err := x.typeOf(v.Type()); err != nil {
			why = fmt.Errorf("%s has type %s, which %w", id.Name, v.Type(), err)
		}
	}
	if why == nil {
		return false
	}
	for _, id := range vs.Names {
		if v, ok := c.Info.Defs[id].(*types.Var); ok {
			if _, sym := x.symbolOf(c, v); sym != nil {
				sym.declared = true
			}
			x.kept[v] = true
		}
	}
	x.note(c.N, c.Fset.Position(vs.Pos()).Line, "%v that the program cannot write: the variable keeps its initializer at package level, which runs before main, not where the cell ran", why)
	text := x.node(c, vs)
	out.vars = append(out.vars, func() string { return comment + "var " + text() })
	return true
}

// declareVar declares the package-level variable of v (once per symbol),
// spelling its type as written (texpr) or as the checker found it.
func (x *exporter) declareVar(out *cellOut, c *check.Cell, v *types.Var, texpr ast.Expr, comment string) {
	_, sym := x.symbolOf(c, v)
	if sym == nil || sym.declared {
		return
	}
	sym.declared = true
	typ := x.typeFunc(c, v.Type(), texpr)
	out.vars = append(out.vars, func() string { return comment + "var " + sym.name + " " + typ() })
}

// typeFunc spells type t: as texpr was written in c, or from t.
func (x *exporter) typeFunc(c *check.Cell, t types.Type, texpr ast.Expr) func() string {
	if texpr != nil {
		return x.node(c, texpr)
	}
	f, err := x.typeOf(t)
	if err != nil {
		x.notes = append(x.notes, fmt.Sprintf("cell [%d]: %v", c.N, err))
		return func() string { return "any /* " + types.TypeString(t, nil) + " */" }
	}
	return f
}

// statement is top-level statement i of c in the program's main: a
// definition becomes an assignment (the variables are package-level).
func (x *exporter) statement(c *check.Cell, i int, st ast.Stmt) func() string {
	span := c.StmtSpans[i]
	tf := c.Fset.File(span.Pos)
	if tf == nil {
		return func() string { return "" }
	}
	text := c.Text(tf)
	if startsWithWord(text[tf.Offset(span.Pos):], "var") {
		return x.varStatement(c, st)
	}
	var more []edit
	target := st
	if l, ok := target.(*ast.LabeledStmt); ok {
		target = l.Stmt
	}
	if as, ok := target.(*ast.AssignStmt); ok && as.TokPos.IsValid() {
		off := tf.Offset(as.TokPos)
		if strings.HasPrefix(text[off:], ":=") {
			more = append(more, edit{off, off + 2, func() string { return "=" }})
		}
	}
	return x.span(c, span.Pos, span.End, st, more...)
}

// varStatement is the assignment check made of a top-level var statement.
func (x *exporter) varStatement(c *check.Cell, st ast.Stmt) func() string {
	switch st := st.(type) {
	case *ast.AssignStmt:
		var lhs, rhs []func() string
		for _, l := range st.Lhs {
			lhs = append(lhs, x.node(c, l))
		}
		for _, r := range st.Rhs {
			if star, ok := r.(*ast.StarExpr); ok {
				if call, ok := star.X.(*ast.CallExpr); ok && len(call.Args) == 1 {
					if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "new" && (!id.Pos().IsValid() || call.Lparen == id.Pos()) {
						arg := x.node(c, call.Args[0])
						rhs = append(rhs, func() string { return "*new(" + arg() + ")" })
						continue
					}
				}
			}
			rhs = append(rhs, x.node(c, r))
		}
		return func() string { return join(lhs, ", ") + " = " + join(rhs, ", ") }
	case *ast.BlockStmt:
		var parts []func() string
		for _, s := range st.List {
			parts = append(parts, x.varStatement(c, s))
		}
		return func() string { return join(parts, "\n") }
	}
	return x.node(c, st)
}

func join(fs []func() string, sep string) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f()
	}
	return strings.Join(parts, sep)
}

func startsWithWord(s, word string) bool {
	return strings.HasPrefix(s, word+" ") || strings.HasPrefix(s, word+"\t") || strings.HasPrefix(s, word+"(")
}
