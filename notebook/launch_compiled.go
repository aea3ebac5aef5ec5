package notebook

// Launches when cells are compiled (see launch.go for what a launch carries
// and why). The kernel side reads the session from the type checker
// (package check) instead of the interpreter: the launched function's
// signature, the declarations it needs and the types of the variables it
// reaches are all go/types facts there, and the variables' values are the
// compiled session's storage. The worker side replays the declarations as
// one compiled cell, sets the carried values into that cell's variables
// with encoding/json, and calls the function in a second cell, so that its
// panics, output, os.Exit and interrupts take the path of any cell's.
//
// Only what the function can reach travels: the declarations it uses,
// transitively (the checker records each declaration's uses), with every
// method of the types among them (an interface call may reach any). So an
// unrelated cell that a worker could not compile, or a variable that cannot
// be carried but that the function never touches, does not stop a launch.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/printer"
	"go/token"
	"go/types"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/display"
	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/launcher"
	"github.com/goaccel/goaccel/notebook/check"
	"github.com/goaccel/goaccel/notebook/compiled"
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

// launchTypes remembers the result types of the functions prepared for a
// launch, by payload, for DecodeResults (a few: launches do not nest
// deeply).
type launchTypes struct {
	sum  [sha256.Size]byte
	outs []reflect.Type
}

const keptLaunchTypes = 8

// rememberResultTypes records the result types of fn, launched with
// payload: the workers send results as JSON, and DecodeResults decodes them
// into these types (a cell's types exist only in this process).
func (e *Engine) rememberResultTypes(payload []byte, fn any) {
	ft := reflect.TypeOf(fn)
	if ft == nil || ft.Kind() != reflect.Func {
		return
	}
	lt := launchTypes{sum: sha256.Sum256(payload)}
	for i := 0; i < ft.NumOut(); i++ {
		lt.outs = append(lt.outs, ft.Out(i))
	}
	e.launchMu.Lock()
	defer e.launchMu.Unlock()
	e.resultTypes = append(e.resultTypes, lt)
	if len(e.resultTypes) > keptLaunchTypes {
		e.resultTypes = e.resultTypes[len(e.resultTypes)-keptLaunchTypes:]
	}
}

// resultTypesOf returns the result types recorded for payload, nil when
// none were (an interpreted launch).
func (e *Engine) resultTypesOf(payload []byte) []reflect.Type {
	sum := sha256.Sum256(payload)
	e.launchMu.Lock()
	defer e.launchMu.Unlock()
	for i := len(e.resultTypes) - 1; i >= 0; i-- {
		if e.resultTypes[i].sum == sum {
			return e.resultTypes[i].outs
		}
	}
	return nil
}

// prepareCompiled is Prepare for compiled cells.
func (e *Engine) prepareCompiled(fn any, args []any) ([]byte, error) {
	name, err := e.takeLaunchName(fn)
	if err != nil {
		return nil, err
	}
	e.noteLaunch(name)
	w := newReplayWorld(e.compiled.Session().Checker(), e.compiled.Session().Pending())
	items := w.closure(name)
	sig, err := launchedSignature(name, items[name])
	if err != nil {
		return nil, err
	}
	names := newReplayNames(w, items)
	p := launchPayload{Func: name, Variadic: sig.Variadic()}
	if p.Params, err = typeStrings(name, "parameter", sig.Params(), names); err != nil {
		return nil, err
	}
	if p.Results, err = typeStrings(name, "result", sig.Results(), names); err != nil {
		return nil, err
	}
	if p.Args, err = encodeArgs(name, len(p.Params), p.Variadic, args); err != nil {
		return nil, err
	}
	p.Decls = replayDecls(items, names)
	if p.Vars, err = e.carryVars(name, items, names); err != nil {
		return nil, err
	}
	p.Imports = replayImports(w, names, p.Decls)
	e.prebuildWorker(&p)
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	e.rememberResultTypes(b, fn)
	return b, nil
}

// takeLaunchName returns the name the launching call gave fn. A name is
// used once, and only for the function value it came with: a launch of a
// value the call did not name (a closure, a variable) must not launch an
// earlier launch's function.
func (e *Engine) takeLaunchName(fn any) (string, error) {
	e.launchMu.Lock()
	name, ptr := e.launchFunc, e.launchFuncPtr
	e.launchFunc, e.launchFuncPtr = "", 0
	e.launchMu.Unlock()
	if name == "" || ptr != funcPointer(fn) {
		return "", errors.New("the function to launch must be a function declared in a cell (func train(...) {...}), passed by its name")
	}
	return name, nil
}

// launchedSignature is the signature of the function a launch names.
func launchedSignature(name string, root *replayItem) (*types.Signature, error) {
	var fn *types.Func
	if root != nil {
		fn, _ = root.obj.(*types.Func)
	}
	if fn == nil || fn.Type().(*types.Signature).Recv() != nil || name == "main" {
		return nil, fmt.Errorf("%s is not a function declared in a cell; launched functions must be declared with func %s(...) so the workers can rebuild them", name, name)
	}
	sig := fn.Type().(*types.Signature)
	if sig.TypeParams().Len() > 0 {
		return nil, fmt.Errorf("%s is generic; launch a non-generic function", name)
	}
	return sig, nil
}

// typeStrings writes the types of a parameter or result list for the
// workers.
func typeStrings(fn, what string, list *types.Tuple, names *replayNames) ([]string, error) {
	var out []string
	for i := 0; i < list.Len(); i++ {
		t := list.At(i).Type()
		if why := unnameable(t); why != "" {
			return nil, fmt.Errorf("%s cannot be launched: its %s %d cannot be declared in the workers: %s", fn, what, i+1, why)
		}
		out = append(out, names.typeString(t))
	}
	return out, nil
}

// encodeArgs encodes a launch's arguments, the variadic tail packed as
// one slice.
func encodeArgs(name string, nparams int, variadic bool, args []any) ([]json.RawMessage, error) {
	if len(args) != nparams && !(variadic && len(args) >= nparams-1) {
		return nil, fmt.Errorf("%s takes %d argument(s), the launch passes %d", name, nparams, len(args))
	}
	if variadic {
		fixed := append([]any{}, args[:nparams-1]...)
		args = append(fixed, args[nparams-1:])
	}
	out := make([]json.RawMessage, 0, len(args))
	for i, a := range args {
		b, err := json.Marshal(a)
		if err != nil {
			return nil, fmt.Errorf("argument %d of %s (%T) cannot be carried to the workers: %w", i+1, name, a, err)
		}
		out = append(out, b)
	}
	return out, nil
}

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

// carryVars declares every variable among items and carries its value.
// Errors name the variable, in the words of the interpreted launch.
func (e *Engine) carryVars(fn string, items map[string]*replayItem, names *replayNames) ([]carriedVar, error) {
	keys := make([]string, 0, len(items))
	for k, it := range items {
		if _, ok := it.obj.(*types.Var); ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []carriedVar
	for _, n := range keys {
		t := items[n].obj.Type()
		if why := unnameable(t); why != "" {
			return nil, fmt.Errorf("global variable %s, which %s uses, cannot be carried to the workers: %s", n, fn, why)
		}
		texpr := names.typeString(t)
		v, ok := e.compiled.Session().PendingValue(n)
		if !ok {
			v, ok = e.compiled.Session().Value(n)
		}
		if !ok {
			return nil, fmt.Errorf("global variable %s, which %s uses, cannot be carried to the workers: it has no value yet", n, fn)
		}
		b, err := carryValue(v)
		if err != nil {
			return nil, fmt.Errorf("global variable %s (%s), which %s uses, cannot be carried to the workers: %w", n, texpr, fn, err)
		}
		if b == nil {
			return nil, fmt.Errorf("global variable %s (%s), which %s uses, cannot be carried to the workers exactly (only exported fields and JSON-encodable values travel); make it a parameter of %s or compute it inside", n, texpr, fn, fn)
		}
		out = append(out, carriedVar{Name: n, Type: texpr, Value: b})
	}
	return out, nil
}

// carryValue encodes v as JSON, or returns nil bytes when decoding them
// does not give v back.
func carryValue(v reflect.Value) ([]byte, error) {
	b, err := json.Marshal(v.Interface())
	if err != nil {
		return nil, err
	}
	back := reflect.New(v.Type())
	if err := json.Unmarshal(b, back.Interface()); err != nil || !reflect.DeepEqual(back.Elem().Interface(), v.Interface()) {
		return nil, nil
	}
	return b, nil
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

// decodeCompiledResults decodes results into the launched function's own
// result types (a []float64 comes back as one, a cell's struct as that
// struct); a value that does not fit an interface type arrives in its JSON
// shape.
func decodeCompiledResults(outs []reflect.Type, rank int, raw []json.RawMessage) ([]any, error) {
	out := make([]any, len(raw))
	for i, r := range raw {
		if i < len(outs) {
			pv := reflect.New(outs[i])
			err := json.Unmarshal(r, pv.Interface())
			if err == nil {
				out[i] = pv.Elem().Interface()
				continue
			}
			if outs[i].Kind() != reflect.Interface {
				return nil, fmt.Errorf("rank %d result %d (%s): %w", rank, i, outs[i], err)
			}
		}
		var v any
		if err := json.Unmarshal(r, &v); err != nil {
			return nil, fmt.Errorf("rank %d result %d: %w", rank, i, err)
		}
		out[i] = v
	}
	return out, nil
}

// The names the worker's cells give the arguments and the results; a
// notebook that uses these spellings gets a suffix added.
const (
	argPrefix    = "gxLaunchArg"
	resultPrefix = "gxLaunchResult"
)

// workerPlan is what a worker runs: the cells, and the names they give
// the arguments and the results.
type workerPlan struct {
	cells            []string
	argName, resName string
}

// planWorker writes the worker's cells for p: one declares everything (the
// carried variables and the arguments as `var x T`), and a second calls the
// function once the values are set; one cell does both when nothing is
// carried. The kernel plans the same cells to build them before the
// workers start (prebuildWorker).
func planWorker(p launchPayload) workerPlan {
	argName, resName := workerNames(p)
	var decl strings.Builder
	for _, im := range p.Imports {
		decl.WriteString(im + "\n")
	}
	for _, d := range p.Decls {
		decl.WriteString(d + "\n")
	}
	for _, v := range p.Vars {
		fmt.Fprintf(&decl, "var %s %s\n", v.Name, v.Type)
	}
	for i, t := range p.Params {
		fmt.Fprintf(&decl, "var %s%d %s\n", argName, i, t)
	}
	call := callStatement(p, argName, resName)
	plan := workerPlan{argName: argName, resName: resName}
	if carries(p) {
		plan.cells = []string{decl.String(), call}
	} else {
		plan.cells = []string{decl.String() + call}
	}
	return plan
}

// carries reports whether values travel with p.
func carries(p launchPayload) bool {
	if len(p.Params) > 0 {
		return true
	}
	for _, v := range p.Vars {
		if v.Value != nil {
			return true
		}
	}
	return false
}

// prebuildWorker builds the cells the workers will run, in the kernel,
// once: the workers then find their plugins in the build cache instead of
// each building the same ones at the same time. It also records in p the
// kernel's builder state: the session module, so that a worker imports
// every package at the version the cells did (and on another machine
// fetches it), and the export data the builder knows, so that a worker on
// this machine does not ask the go command for it again. A failure to
// build is left to the workers to report, in their words.
func (e *Engine) prebuildWorker(p *launchPayload) {
	ctx := launcher.CellContext()
	opts := compiled.Options{Builder: e.compiled.Builder(), AutoImport: e.packages.AutoImport}
	_ = compiled.Prebuild(ctx, opts, planWorker(*p).cells)
	st := e.compiled.Builder().State()
	p.Build = &st
}

// runCompiledWorker is Run for compiled cells: it runs the planned cells,
// setting the carried values and the arguments into the variables the
// first one declares before the call.
func (e *Engine) runCompiledWorker(ctx context.Context, p launchPayload) ([]byte, error) {
	if p.Build != nil {
		if err := e.compiled.Builder().AdoptState(ctx, *p.Build); err != nil {
			return nil, fmt.Errorf("taking the notebook's modules: %w", err)
		}
	}
	plan := planWorker(p)
	cells := &workerCells{e: e, ctx: ctx, io: &workerIO{forward: display.Current()}}
	if len(plan.cells) == 1 {
		if err := cells.run("replaying the notebook's declarations", plan.cells[0], true); err != nil {
			return nil, err
		}
		return e.workerResults(p, plan.resName)
	}
	if err := cells.run("replaying the notebook's declarations", plan.cells[0], false); err != nil {
		return nil, err
	}
	if err := e.setCarried(p, plan.argName); err != nil {
		return nil, err
	}
	if err := cells.run("", plan.cells[1], true); err != nil {
		return nil, err
	}
	return e.workerResults(p, plan.resName)
}

// workerNames picks the names of the argument and result variables: none
// the replayed code uses.
func workerNames(p launchPayload) (arg, res string) {
	var all strings.Builder
	for _, s := range p.Decls {
		all.WriteString(s)
	}
	for _, v := range p.Vars {
		all.WriteString(" " + v.Name)
	}
	text := all.String()
	arg, res = argPrefix, resultPrefix
	for i := 2; strings.Contains(text, arg) || strings.Contains(text, res); i++ {
		arg, res = argPrefix+strconv.Itoa(i)+"_", resultPrefix+strconv.Itoa(i)+"_"
	}
	return arg, res
}

// callStatement calls the function with the argument variables and binds
// its results.
func callStatement(p launchPayload, argName, resName string) string {
	args := make([]string, len(p.Params))
	for i := range p.Params {
		args[i] = argName + strconv.Itoa(i)
		if p.Variadic && i == len(p.Params)-1 {
			args[i] += "..."
		}
	}
	invoke := p.Func + "(" + strings.Join(args, ", ") + ")"
	if len(p.Results) == 0 {
		return invoke + "\n"
	}
	res := make([]string, len(p.Results))
	for i := range res {
		res[i] = resName + strconv.Itoa(i)
	}
	return strings.Join(res, ", ") + " := " + invoke + "\n"
}

// setCarried decodes the carried values and the arguments into the
// variables the declaration cell made for them.
func (e *Engine) setCarried(p launchPayload, argName string) error {
	set := func(name string, b json.RawMessage) error {
		v, ok := e.compiled.Session().Value(name)
		if !ok {
			return fmt.Errorf("goaccel: restoring %s in the worker: the replayed cell did not declare it", name)
		}
		if err := json.Unmarshal(b, v.Addr().Interface()); err != nil {
			return fmt.Errorf("goaccel: restoring %s in the worker: %w", name, err)
		}
		return nil
	}
	for _, v := range p.Vars {
		if v.Value != nil {
			if err := set(v.Name, v.Value); err != nil {
				return err
			}
		}
	}
	for i, a := range p.Args {
		if err := set(argName+strconv.Itoa(i), a); err != nil {
			return err
		}
	}
	return nil
}

// workerResults encodes the call's results; a non-nil trailing error
// becomes the worker's error.
func (e *Engine) workerResults(p launchPayload, resName string) ([]byte, error) {
	out := make([]json.RawMessage, len(p.Results))
	var resErr error
	for i := range out {
		out[i] = json.RawMessage("null")
		v, ok := e.compiled.Session().Value(resName + strconv.Itoa(i))
		if !ok {
			continue // the function stopped the cell (os.Exit(0))
		}
		if i == len(out)-1 && p.Results[i] == "error" {
			if err, _ := v.Interface().(error); err != nil {
				resErr = errors.New(err.Error())
			}
			continue
		}
		b, err := json.Marshal(v.Interface())
		if err != nil {
			return nil, fmt.Errorf("goaccel: result %d of the launched function cannot be sent back: %w", i, err)
		}
		out[i] = b
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return b, resErr
}

// workerCells runs a worker's cells, numbered from 1.
type workerCells struct {
	e   *Engine
	ctx context.Context
	io  *workerIO
	n   int
}

// run runs code as the next cell. A panic comes back as a
// *launcher.PanicError; errors of the replay (what says what it was) name
// it; calls tells that the cell calls the launched function, whose own
// failures are reported as they are.
func (w *workerCells) run(what, code string, calls bool) error {
	w.n++
	rep := w.e.Execute(w.ctx, frontend.ExecuteRequest{Code: code, Silent: true, ExecutionCount: w.n}, w.io)
	if rep.Err == nil {
		return nil
	}
	if rep.Err.Name == "panic" {
		return &launcher.PanicError{Value: rep.Err.Value, Stack: strings.Join(withoutCallCell(rep.Err.Traceback), "\n")}
	}
	replay := what != "" && (!calls || compileErrorNames[rep.Err.Name])
	if replay {
		return fmt.Errorf("%s: %s: %s\n%s", what, rep.Err.Name, rep.Err.Value, strings.Join(rep.Err.Traceback, "\n"))
	}
	return fmt.Errorf("%s: %s", rep.Err.Name, rep.Err.Value)
}

// withoutCallCell drops from a panic's traceback the frame of the
// worker's own cell that called the function: its position is in no cell
// of the notebook (the function's frames keep the notebook's positions).
func withoutCallCell(tb []string) []string {
	n := len(tb)
	if n >= 2 && tb[n-2] == "main.<cell>()" && strings.HasPrefix(tb[n-1], "\t") {
		return tb[:n-2]
	}
	return tb
}

// compileErrorNames are the errors of a cell that did not get to run.
var compileErrorNames = map[string]bool{"CompileError": true, "SyntaxError": true, "BuildError": true, "ImportError": true}
