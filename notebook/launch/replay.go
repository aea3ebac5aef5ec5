package launch

// What a compiled launch replays: the closure of the declarations the
// launched function reaches (replayWorld), written back as source with
// type expressions the workers can compile (replayNames).

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/printer"
	"go/token"
	"go/types"
	"sort"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/notebook/check"
)

// replayItem is one declaration of the notebook that a launched function
// needs in the workers.
type replayItem struct {
	key  string // its name; "T.M" for a method
	obj  types.Object
	unit *check.Unit // its source as written; nil for variables, and for constants defined among statements
	deps []string    // keys of the declarations it uses
}

// replayWorld is the notebook's declarations as they stand for a launch:
// the session's, with those of the cell that is running over them (a cell
// may declare a function and launch it; its declarations are committed
// only when it ends).
type replayWorld struct {
	chk *check.Session
	own map[string]*replayItem // what the running cell declares, by key
	// imports are the notebook's named imports (local name → path), the
	// running cell's over the session's; special its dot and blank imports.
	imports map[string]string
	special []*check.Import
}

// newReplayWorld reads the session, and the running cell when there is one.
func newReplayWorld(chk *check.Session, running *check.Cell) *replayWorld {
	w := &replayWorld{chk: chk, own: map[string]*replayItem{}, imports: chk.Imports()}
	for _, im := range chk.ImportList() {
		if im.Name == "." || im.Name == "_" {
			w.special = append(w.special, im)
		}
	}
	if running != nil {
		for _, im := range running.Imports {
			switch im.Name {
			case ".", "_":
				w.special = append(w.special, im)
			default:
				w.imports[im.Name] = im.Path
			}
		}
		w.addCell(running)
	}
	return w
}

// addCell records the declarations of the running cell c.
func (w *replayWorld) addCell(c *check.Cell) {
	decls := append([]ast.Decl(nil), c.Decls...)
	for _, r := range c.Rehomed {
		decls = append(decls, r.Decl)
	}
	add := func(obj types.Object, unit *check.Unit, node ast.Node) {
		key := objKey(obj)
		if key == "" || key == "init" || key == "_" {
			return
		}
		it := &replayItem{key: key, obj: obj, unit: unit}
		if _, isVar := obj.(*types.Var); isVar {
			it.unit = nil // travels as `var x T` and its value
			it.deps = typeKeys(obj.Type())
		} else if node != nil {
			it.deps = usedKeys(c.Info, node)
		}
		if _, isConst := obj.(*types.Const); isConst {
			// A constant may travel by its value, `const B T = 1`.
			it.deps = append(it.deps, typeKeys(obj.Type())...)
		}
		w.own[key] = it
	}
	for _, d := range decls {
		unit := c.Unit(d)
		switch d := d.(type) {
		case *ast.FuncDecl:
			add(c.Info.Defs[d.Name], unit, d)
		case *ast.GenDecl:
			for _, sp := range d.Specs {
				switch sp := sp.(type) {
				case *ast.TypeSpec:
					add(c.Info.Defs[sp.Name], unit, sp)
				case *ast.ValueSpec:
					for _, id := range sp.Names {
						add(c.Info.Defs[id], unit, sp)
					}
				}
			}
		}
	}
	// Variables that statements define, and constants declared among
	// statements (check moves both to the package level).
	for _, h := range c.Hoisted {
		add(h.Obj, nil, nil)
	}
	for _, d := range c.File.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST && c.Unit(g) == nil {
			for _, sp := range g.Specs {
				for _, id := range sp.(*ast.ValueSpec).Names {
					add(c.Info.Defs[id], nil, sp)
				}
			}
		}
	}
}

// item returns the declaration in force for key, nil when there is none.
func (w *replayWorld) item(key string) *replayItem {
	if it := w.own[key]; it != nil {
		return it
	}
	typ, method, isMethod := strings.Cut(key, ".")
	if isMethod {
		if w.own[typ] != nil {
			return nil // a type the running cell declares has its methods there
		}
		t := w.chk.Lookup(typ)
		if t == nil || t.Kind != check.TypeEntry {
			return nil
		}
		for _, m := range w.chk.Methods(t) {
			if m.Name == method {
				return entryItem(m)
			}
		}
		return nil
	}
	if e := w.chk.Lookup(key); e != nil && e.Kind != check.MethodEntry {
		return entryItem(e)
	}
	return nil
}

// methodKeys returns the keys of the methods of the type called typ.
func (w *replayWorld) methodKeys(typ string) []string {
	var out []string
	if w.own[typ] != nil {
		for k := range w.own {
			if strings.HasPrefix(k, typ+".") {
				out = append(out, k)
			}
		}
		sort.Strings(out)
		return out
	}
	if t := w.chk.Lookup(typ); t != nil && t.Kind == check.TypeEntry {
		for _, m := range w.chk.Methods(t) {
			out = append(out, typ+"."+m.Name)
		}
	}
	return out
}

// closure returns what root needs, root included, keyed by key. Names
// that resolve to nothing are left out (a worker reports them when it
// compiles).
func (w *replayWorld) closure(root string) map[string]*replayItem {
	out := map[string]*replayItem{}
	queue := []string{root}
	for len(queue) > 0 {
		key := queue[0]
		queue = queue[1:]
		if _, seen := out[key]; seen || key == "main" && key != root {
			continue
		}
		it := w.item(key)
		if it == nil {
			continue
		}
		out[key] = it
		queue = append(queue, it.deps...)
		if _, isType := it.obj.(*types.TypeName); isType {
			queue = append(queue, w.methodKeys(key)...)
		}
	}
	return out
}

// entryItem is the replay item of a session entry. The entries an entry
// depends on may have been replaced compatibly since; their names find the
// bindings in force.
func entryItem(e *check.Entry) *replayItem {
	it := &replayItem{key: entryKey(e), obj: e.Obj, unit: e.Unit}
	if e.Kind == check.VarEntry {
		// A variable travels as `var x T`: its initializer's uses do not
		// matter, its type's do.
		it.deps = typeKeys(e.Obj.Type())
		it.unit = nil
		return it
	}
	for _, d := range e.Deps {
		it.deps = append(it.deps, entryKey(d))
	}
	if e.Kind == check.ConstEntry {
		// A constant may travel by its value, `const B T = 1`.
		it.deps = append(it.deps, typeKeys(e.Obj.Type())...)
	}
	return it
}

func entryKey(e *check.Entry) string {
	if e.Kind == check.MethodEntry && e.Recv != nil {
		return e.Recv.Name + "." + e.Name
	}
	return e.Name
}

// objKey is the key of a notebook-level object ("" for anything else:
// locals, fields, other packages' objects).
func objKey(obj types.Object) string {
	if obj == nil || obj.Pkg() == nil || obj.Pkg().Path() != "main" {
		return ""
	}
	if fn, ok := obj.(*types.Func); ok {
		if recv := fn.Type().(*types.Signature).Recv(); recv != nil {
			if n := namedOf(recv.Type()); n != nil {
				return n.Obj().Name() + "." + fn.Name()
			}
			return ""
		}
	}
	if obj.Parent() == nil || obj.Parent().Parent() != types.Universe {
		return ""
	}
	return obj.Name()
}

func namedOf(t types.Type) *types.Named {
	if p, ok := types.Unalias(t).(*types.Pointer); ok {
		t = p.Elem()
	}
	n, _ := types.Unalias(t).(*types.Named)
	return n
}

// usedKeys returns the keys of the notebook-level objects node uses.
func usedKeys(info *types.Info, node ast.Node) []string {
	seen := map[string]bool{}
	var out []string
	ast.Inspect(node, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			if k := objKey(info.Uses[id]); k != "" && !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
		return true
	})
	return out
}

// typeKeys returns the keys of the notebook's named types t is built from.
func typeKeys(t types.Type) []string {
	var out []string
	namedIn(t, func(n *types.Named) {
		if k := objKey(n.Origin().Obj()); k != "" {
			out = append(out, k)
		}
	})
	return out
}

// unnameable returns why a worker's cell cannot write the type t, or "".
func unnameable(t types.Type) string {
	why := ""
	namedIn(t, func(n *types.Named) {
		o := n.Origin().Obj()
		switch {
		case why != "" || o.Pkg() == nil:
		case o.Pkg().Path() == "main" && objKey(o) == "":
			why = "its type " + o.Name() + " is declared inside a function"
		case o.Pkg().Path() != "main" && !o.Exported():
			why = "its type " + o.Pkg().Path() + "." + o.Name() + " is not exported by its package"
		}
	})
	return why
}

// namedIn calls visit for every named type t is built from (not looking
// into the named types' own definitions).
func namedIn(t types.Type, visit func(*types.Named)) {
	seen := map[types.Type]bool{}
	var walk func(types.Type)
	walk = func(t types.Type) {
		if t == nil || seen[t] {
			return
		}
		seen[t] = true
		switch t := types.Unalias(t).(type) {
		case *types.Named:
			visit(t)
			for i := 0; i < t.TypeArgs().Len(); i++ {
				walk(t.TypeArgs().At(i))
			}
		case *types.Pointer:
			walk(t.Elem())
		case *types.Slice:
			walk(t.Elem())
		case *types.Array:
			walk(t.Elem())
		case *types.Chan:
			walk(t.Elem())
		case *types.Map:
			walk(t.Key())
			walk(t.Elem())
		case *types.Struct:
			for i := 0; i < t.NumFields(); i++ {
				walk(t.Field(i).Type())
			}
		case *types.Tuple:
			for i := 0; i < t.Len(); i++ {
				walk(t.At(i).Type())
			}
		case *types.Signature:
			walk(t.Params())
			walk(t.Results())
		case *types.Interface:
			for i := 0; i < t.NumEmbeddeds(); i++ {
				walk(t.EmbeddedType(i))
			}
			for i := 0; i < t.NumExplicitMethods(); i++ {
				walk(t.ExplicitMethod(i).Type())
			}
		}
	}
	walk(t)
}

// replayNames writes type expressions for the workers: the notebook's
// types by name, other packages' by the names the notebook imports them
// under, and a package the notebook never imported under a free name that
// the replay then imports.
type replayNames struct {
	byPath map[string]string // import path → local name
	taken  map[string]bool   // names a new import must not take
	used   map[string]bool   // local names of imports the replay needs
	extra  map[string]string // local name → path of imports the notebook lacks
}

func newReplayNames(w *replayWorld, items map[string]*replayItem) *replayNames {
	n := &replayNames{byPath: map[string]string{}, taken: map[string]bool{}, used: map[string]bool{}, extra: map[string]string{}}
	names := make([]string, 0, len(w.imports))
	for name := range w.imports {
		names = append(names, name)
	}
	sort.Strings(names) // the same notebook gets the same replay
	for _, name := range names {
		if _, dup := n.byPath[w.imports[name]]; !dup {
			n.byPath[w.imports[name]] = name
		}
		n.taken[name] = true
	}
	for k := range items {
		n.taken[k] = true
	}
	return n
}

func (n *replayNames) qualify(p *types.Package) string {
	if p.Path() == "main" {
		return ""
	}
	if name, ok := n.byPath[p.Path()]; ok {
		n.used[name] = true
		return name
	}
	name := p.Name()
	for i := 2; n.taken[name] || strings.HasPrefix(name, "_gx"); i++ {
		name = p.Name() + strconv.Itoa(i)
	}
	n.taken[name] = true
	n.byPath[p.Path()] = name
	n.extra[name] = p.Path()
	n.used[name] = true
	return name
}

func (n *replayNames) typeString(t types.Type) string { return types.TypeString(t, n.qualify) }

// replayDecls returns the sources of the declarations among items, in the
// order the notebook wrote them. A grouped declaration travels whole when
// all it declares is needed and still in force; otherwise only its needed
// parts (a constant by its value, since dropping a line of a group may
// change what iota gives the next).
func replayDecls(items map[string]*replayItem, names *replayNames) []string {
	byUnit := map[*check.Unit][]*replayItem{}
	var loose []*replayItem // constants without a source
	for _, it := range items {
		switch {
		case it.unit != nil:
			byUnit[it.unit] = append(byUnit[it.unit], it)
		case isConst(it.obj):
			loose = append(loose, it)
		}
	}
	units := make([]*check.Unit, 0, len(byUnit))
	for u := range byUnit {
		units = append(units, u)
	}
	sort.Slice(units, func(i, j int) bool {
		a, b := units[i], units[j]
		if a.Cell != b.Cell {
			return a.Cell < b.Cell
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	var out []string
	for _, u := range units {
		srcs := unitSource(u, byUnit[u], names)
		if len(srcs) == 1 && srcs[0] == u.Src && u.Cell > 0 {
			// The worker's positions are the notebook's: a panic's
			// traceback names the cell and line the user wrote.
			srcs[0] = fmt.Sprintf("//line %s:%d:%d\n%s", check.FileName(u.Cell), u.Line, u.Col, u.Src)
		}
		out = append(out, srcs...)
	}
	sort.Slice(loose, func(i, j int) bool { return loose[i].key < loose[j].key })
	for _, it := range loose {
		out = append(out, constSource(it.obj.(*types.Const), names))
	}
	return out
}

func isConst(obj types.Object) bool {
	_, ok := obj.(*types.Const)
	return ok
}

// unitSource is what a unit contributes when needed lists its items in
// the replay.
func unitSource(u *check.Unit, needed []*replayItem, names *replayNames) []string {
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+u.Src, parser.SkipObjectResolution)
	if err != nil || len(f.Decls) != 1 {
		return []string{u.Src}
	}
	g, ok := f.Decls[0].(*ast.GenDecl)
	if !ok {
		return []string{u.Src}
	}
	want := map[string]bool{}
	for _, it := range needed {
		want[it.key] = true
	}
	var keep []ast.Spec
	whole := true
	for _, sp := range g.Specs {
		switch sp := sp.(type) {
		case *ast.TypeSpec:
			if want[sp.Name.Name] {
				keep = append(keep, sp)
			} else {
				whole = false
			}
		case *ast.ValueSpec:
			for _, id := range sp.Names {
				if id.Name != "_" && !want[id.Name] {
					whole = false
				}
			}
		}
	}
	if whole {
		return []string{u.Src}
	}
	if g.Tok == token.CONST {
		var out []string
		for _, it := range needed {
			out = append(out, constSource(it.obj.(*types.Const), names))
		}
		sort.Strings(out)
		return out
	}
	g.Specs = keep
	var b bytes.Buffer
	if err := printer.Fprint(&b, token.NewFileSet(), g); err != nil {
		return []string{u.Src}
	}
	return []string{b.String()}
}

// constSource declares c by its value.
func constSource(c *types.Const, names *replayNames) string {
	val := c.Val()
	text := val.ExactString()
	if val.Kind() == constant.Float && strings.Contains(text, "/") {
		text = strings.Replace(text, "/", ".0/", 1) // a rational, not an integer division
	}
	if b, ok := c.Type().(*types.Basic); ok && b.Kind() == types.UntypedRune {
		if r, exact := constant.Int64Val(val); exact {
			text = strconv.QuoteRune(rune(r)) // stays a rune constant
		}
	}
	if b, ok := c.Type().(*types.Basic); ok && b.Info()&types.IsUntyped != 0 {
		return "const " + c.Name() + " = " + text
	}
	return "const " + c.Name() + " " + names.typeString(c.Type()) + " = " + text
}

// replayImports returns the import declarations the replayed code uses:
// the notebook's imports its sources name, those its type expressions
// added, and every dot and blank import (their effect cannot be traced).
func replayImports(w *replayWorld, names *replayNames, decls []string) []string {
	used := map[string]bool{}
	for n := range names.used {
		used[n] = true
	}
	for _, src := range decls {
		for _, n := range selectorBases(src) {
			used[n] = true
		}
	}
	all := map[string]string{}
	for n, p := range w.imports {
		all[n] = p
	}
	for n, p := range names.extra {
		all[n] = p
	}
	var lines []string
	for n, p := range all {
		if used[n] {
			lines = append(lines, "import "+n+" "+strconv.Quote(p))
		}
	}
	sort.Strings(lines)
	seen := map[string]bool{}
	for _, im := range w.special {
		line := "import " + im.Name + " " + strconv.Quote(im.Path)
		if !seen[line] {
			seen[line] = true
			lines = append(lines, line)
		}
	}
	return lines
}

// selectorBases returns the identifiers a declaration's source uses
// before a dot without declaring them: the package names it needs.
func selectorBases(src string) []string {
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+src, 0)
	if err != nil {
		return nil
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		if se, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := se.X.(*ast.Ident); ok && id.Obj == nil {
				out = append(out, id.Name)
			}
		}
		return true
	})
	return out
}
