package gen

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"sort"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/notebook/check"
)

// RuntimePath is the import path of the runtime generated code calls.
const RuntimePath = "github.com/goaccel/goaccel/notebook/gxrt"

// generatedFile is the position file name of code gen writes itself.
const generatedFile = "goaccel-generated"

// Input is what Generate needs beside the cell.
type Input struct {
	Cell *check.Cell
	// Path is the import path of the package to generate.
	Path string
	// Home returns the import path of the compiled package that declares a
	// session entry (types, functions, constants); "" when it has none.
	Home func(e *check.Entry) string
	// FieldHome returns the import path of the package whose code declared
	// a struct field of an earlier cell ("" for unknown).
	FieldHome func(f *types.Var) string
	// StructHome returns the import path of the earlier cell package that
	// exports the alias of an unnamed struct (see structAlias), "" for none.
	StructHome func(alias string) string
	// Reuse names the variables this cell declares again with the same type:
	// they keep the earlier variable's storage.
	Reuse map[string]*check.Entry
	// NoChecks leaves out the interrupt checks at function entries and loop
	// iterations (for measuring what they cost: such code cannot be
	// interrupted while it computes).
	NoChecks bool
}

// ResultKind says what a cell's trailing expression yields.
type ResultKind int

// The kinds of results.
const (
	NoResult     ResultKind = iota // no trailing expression, a call without results, fmt.Println
	SingleResult                   // one value
	MultiResult                    // a call returning several values
)

// Output is a generated package.
type Output struct {
	Source  []byte
	Imports []string // import paths of the file
	// Injected are the session variables the package reaches through
	// pointers the engine sets (GXSymbols "i:ID" → **T).
	Injected []*check.Entry
	// Vars are the variables whose storage the package declares
	// (GXSymbols "v:name" → *T).
	Vars []string
	// StructAliases are the aliases of unnamed structs the package exports.
	StructAliases []string
	// Funcs are its non-generic functions (GXSymbols "f:name" → the
	// function, "o:name" → its override hook, "s:name" → makes a hook that
	// checks for interrupts; see hookDecls).
	Funcs []string
	// Types are its non-generic types (GXSymbols "t:name" → (*T)(nil)).
	Types []string
	// Result is what the trailing expression yields.
	Result ResultKind
}

// gen is one generation in progress.
type gen struct {
	in  Input
	c   *check.Cell
	ed  *editor
	imp *imports

	pkgAlias map[string]string // cell package path → import name
	refs     map[string]string // generated declarations for session bindings, by name
	injected map[*check.Entry]bool
	shadows  []shadow
	usedPkgs map[string]bool // local import names used by the cell's code
	errs     []string

	exportNames map[types.Object]string // own exported funcs/vars → their renamed names
	reuse       map[types.Object]*check.Entry
	hookFuncs   map[*ast.FuncDecl]bool
	hoistDecls  map[ast.Decl]bool // check's declarations of hoisted variables
	trailing    ResultKind

	comms map[ast.Node]bool // communications of select cases (left as they are)
	// deferred are names of earlier cells' functions that a defer calls
	// directly (see deferStmt).
	deferred map[*ast.Ident]bool
	// adopted are the cell's own unnamed structs that an earlier cell spelled
	// the same way, with that cell's package; adoptedFields their fields.
	adopted       map[*types.Struct]string
	adoptedFields map[*types.Var]bool
	structAliases []string // exported by this package
	bare          bool     // render functions without their hook prologue
	nseq          int      // names made up so far
}

type shadow struct {
	st      *types.Struct
	tparams *types.TypeParamList // set for the shadow of a generic struct
	name    string
	decl    string
}

// Generate writes the package for in.Cell.
func Generate(in Input) (*Output, error) {
	c := in.Cell
	g := &gen{
		in: in, c: c,
		ed:            newEditor(c.Fset, c.Text),
		imp:           newImports(c),
		pkgAlias:      map[string]string{},
		refs:          map[string]string{},
		injected:      map[*check.Entry]bool{},
		usedPkgs:      map[string]bool{},
		exportNames:   map[types.Object]string{},
		reuse:         map[types.Object]*check.Entry{},
		hookFuncs:     map[*ast.FuncDecl]bool{},
		hoistDecls:    map[ast.Decl]bool{},
		comms:         map[ast.Node]bool{},
		deferred:      map[*ast.Ident]bool{},
		adopted:       map[*types.Struct]string{},
		adoptedFields: map[*types.Var]bool{},
	}
	g.imp.add("_gxrt", RuntimePath)
	g.classify()
	g.exportStructs()
	g.rewrite()
	out, err := g.assemble()
	if err != nil {
		return nil, err
	}
	if len(g.errs) > 0 {
		sort.Strings(g.errs)
		return nil, fmt.Errorf("%s", strings.Join(uniq(g.errs), "; "))
	}
	return out, nil
}

func (g *gen) fail(format string, a ...any) { g.errs = append(g.errs, fmt.Sprintf(format, a...)) }

// own reports whether obj is declared by the cell's file (not a session
// binding or a stand-in for one).
func (g *gen) own(obj types.Object) bool {
	return obj != nil && obj.Pkg() == g.c.Pkg && g.c.EntryOf(obj) == nil
}

// packageLevel reports whether obj is declared at package level.
func packageLevel(obj types.Object) bool {
	return obj.Parent() != nil && obj.Parent().Parent() == types.Universe
}

// classify records what the cell declares: exported names to rename,
// variables that keep earlier storage, check's hoisted declarations.
func (g *gen) classify() {
	c := g.c
	mine := map[ast.Decl]bool{}
	for _, d := range c.Decls {
		mine[d] = true
	}
	for _, r := range c.Rehomed {
		mine[r.Decl] = true
	}
	for _, d := range c.File.Decls {
		if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.VAR && !mine[d] {
			g.hoistDecls[d] = true
		}
	}
	for id, obj := range c.Info.Defs {
		if obj == nil || !packageLevel(obj) || obj.Pkg() != c.Pkg {
			continue
		}
		switch o := obj.(type) {
		case *types.Var:
			if e, ok := g.in.Reuse[o.Name()]; ok {
				g.reuse[o] = e
				continue
			}
			if ast.IsExported(o.Name()) {
				g.exportNames[o] = "_gxE_" + o.Name()
			}
		case *types.Func:
			if o.Type().(*types.Signature).Recv() == nil && ast.IsExported(o.Name()) {
				g.exportNames[o] = "_gxE_" + o.Name()
			}
		}
		_ = id
	}
}

// pkg returns the import name of a cell package.
func (g *gen) pkg(path string) string {
	if n, ok := g.pkgAlias[path]; ok {
		return n
	}
	n := g.imp.add(fmt.Sprintf("_gxc%d", len(g.pkgAlias)+1), path)
	g.pkgAlias[path] = n
	return n
}

// home returns the import name of the package declaring e.
func (g *gen) home(e *check.Entry) (string, bool) {
	path := ""
	if g.in.Home != nil {
		path = g.in.Home(e)
	}
	if path == "" {
		g.fail("%s has no compiled declaration to refer to", e)
		return "", false
	}
	return g.pkg(path), true
}

// useType returns the name under which the generated package reaches the
// session type e (obj is its type name), declaring an alias for it.
func (g *gen) useType(e *check.Entry, obj *types.TypeName) string {
	name := obj.Name()
	if g.c.Scope.Lookup(name) != obj {
		name = fmt.Sprintf("_gxT%d_%s", e.ID, e.Name)
	}
	g.typeAlias(name, e)
	return name
}

// typeAlias declares `type name = home.GXt_T`.
func (g *gen) typeAlias(name string, e *check.Entry) {
	if _, done := g.refs[name]; done {
		return
	}
	g.refs[name] = "" // break cycles through type parameters' constraints
	h, ok := g.home(e)
	if !ok {
		return
	}
	tn := e.Obj.(*types.TypeName)
	tparams, targs := "", ""
	if n, ok := tn.Type().(*types.Named); ok && n.TypeParams().Len() > 0 {
		var err error
		tparams, targs, err = g.typeParams(n.TypeParams())
		if err != nil {
			g.fail("%s: %v", e, err)
			return
		}
	}
	g.refs[name] = fmt.Sprintf("type %s%s = %s.GXt_%s%s\n", name, tparams, h, e.Name, targs)
}

// typeParams spells a type parameter list and the matching argument list.
func (g *gen) typeParams(list *types.TypeParamList) (params, args string, err error) {
	var ps, as []string
	for i := 0; i < list.Len(); i++ {
		tp := list.At(i)
		ct, err := g.typeText(tp.Constraint())
		if err != nil {
			return "", "", err
		}
		name := tp.Obj().Name()
		if name == "_" {
			// A blank type parameter cannot be passed on; nothing can
			// refer to it, so any fresh name does.
			name = fmt.Sprintf("_gxT%d", i)
		}
		ps = append(ps, name+" "+ct)
		as = append(as, name)
	}
	return "[" + strings.Join(ps, ", ") + "]", "[" + strings.Join(as, ", ") + "]", nil
}

// useFunc declares a wrapper named name for the session function e.
func (g *gen) useFunc(name string, e *check.Entry) {
	if _, done := g.refs[name]; done {
		return
	}
	g.refs[name] = ""
	h, ok := g.home(e)
	if !ok {
		return
	}
	sig := e.Obj.Type().(*types.Signature)
	names := make([]string, sig.Params().Len())
	args := make([]string, len(names))
	for i := range names {
		names[i] = fmt.Sprintf("_gxp%d", i)
		args[i] = names[i]
	}
	if sig.Variadic() && len(args) > 0 {
		args[len(args)-1] += "..."
	}
	var b strings.Builder
	tparams, targs := "", ""
	if sig.TypeParams().Len() > 0 {
		var err error
		tparams, targs, err = g.typeParams(sig.TypeParams())
		if err != nil {
			g.fail("%s: %v", e, err)
			return
		}
	}
	b.WriteString("func " + name + tparams)
	if err := g.writeSignature(&b, sig, names); err != nil {
		g.fail("%s: %v", e, err)
		return
	}
	call := fmt.Sprintf("%s.GXA{}.F_%s(%s)", h, e.Name, strings.Join(args, ", "))
	if sig.TypeParams().Len() > 0 {
		call = fmt.Sprintf("%s.GXg_%s%s(%s)", h, e.Name, targs, strings.Join(args, ", "))
	}
	if sig.Results().Len() > 0 {
		b.WriteString(" { return " + call + " }\n")
	} else {
		b.WriteString(" { " + call + " }\n")
	}
	g.refs[name] = b.String()
}

// useConst declares name as the session constant e.
func (g *gen) useConst(name string, e *check.Entry) {
	if _, done := g.refs[name]; done {
		return
	}
	h, ok := g.home(e)
	if !ok {
		return
	}
	g.refs[name] = fmt.Sprintf("const %s = %s.GXc_%s\n", name, h, e.Name)
}

// injectedVar returns the expression for the session variable e.
func (g *gen) injectedVar(e *check.Entry) string {
	if !g.injected[e] {
		g.injected[e] = true
		t, err := g.typeText(e.Obj.Type())
		if err != nil {
			g.fail("variable %s: %v", e.Name, err)
		}
		g.refs[fmt.Sprintf("_gxv%d", e.ID)] = fmt.Sprintf("var _gxv%d *%s\n", e.ID, t)
	}
	return fmt.Sprintf("(*_gxv%d)", e.ID)
}

// methodName is the name a method has in generated code: unexported
// methods declared in cells are exported under a prefix, so types and
// interfaces of different cells meet.
func (g *gen) methodName(m *types.Func) string {
	if m.Pkg() == g.c.Pkg && !m.Exported() && m.Name() != "_" {
		return "Gxm_" + m.Name()
	}
	return m.Name()
}

// varRef is the expression for a package-level variable of the file.
func (g *gen) varRef(v *types.Var) string {
	if e := g.reuse[v]; e != nil {
		return g.injectedVar(e)
	}
	if n, ok := g.exportNames[v]; ok {
		return n
	}
	return v.Name()
}

func uniq(ss []string) []string {
	var out []string
	for i, s := range ss {
		if i == 0 || s != ss[i-1] {
			out = append(out, s)
		}
	}
	return out
}

// quote is strconv.Quote.
func quote(s string) string { return strconv.Quote(s) }
