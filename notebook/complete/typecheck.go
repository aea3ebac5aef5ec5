package complete

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// typesCache holds the importers go/types uses for the packages cells
// import, with the packages they loaded. Guarded by its mutex, which is held
// for the whole of a type check (the importers are not safe for concurrent
// use); it only grows.
//
// Packages come from compiler export data ("gc": `go list -export`, fast
// when the Go build cache is warm) and, where that fails, from source under
// GOROOT.
var typesCache struct {
	sync.Mutex
	fset *token.FileSet
	gc   types.Importer
	src  types.Importer
	pkgs map[string]*types.Package
}

// checkTimeout bounds how long a request waits for a type check; a check
// that runs longer (a cold build cache) goes on in the background and fills
// the cache for the next request.
const checkTimeout = 2 * time.Second

type cachedImporter struct{}

// Import is called with typesCache locked.
func (cachedImporter) Import(path string) (*types.Package, error) {
	c := &typesCache
	if p, ok := c.pkgs[path]; ok {
		if p == nil {
			return nil, fmt.Errorf("cannot import %q", path)
		}
		return p, nil
	}
	if c.fset == nil {
		c.fset = token.NewFileSet()
		c.gc = importer.ForCompiler(c.fset, "gc", nil)
		c.src = importer.ForCompiler(c.fset, "source", nil)
		c.pkgs = map[string]*types.Package{}
	}
	var p *types.Package
	func() {
		defer func() { _ = recover() }()
		p, _ = c.gc.Import(path)
	}()
	if p == nil && path != "C" {
		func() {
			defer func() { _ = recover() }()
			p, _ = c.src.Import(path)
		}()
	}
	c.pkgs[path] = p
	if p == nil {
		return nil, fmt.Errorf("cannot import %q", path)
	}
	return p, nil
}

// checked is a type-checked cell.
type checked struct {
	p    *cellParse
	pkg  *types.Package
	info *types.Info
}

// importsPrefix renders the scope's imports for the top of each file.
func importsPrefix(sd scopeData) string {
	if len(sd.imports) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("import (")
	for _, name := range sd.importNames() {
		fmt.Fprintf(&b, "%s %s;", name, strconv.Quote(sd.imports[name]))
	}
	b.WriteString(");")
	return b.String()
}

// declSource turns a logged declaration into top-level Go source, or "".
func declSource(d Decl) string {
	if s := strings.TrimSpace(d.Source); s != "" {
		if f, err := parser.ParseFile(token.NewFileSet(), "", "package p;"+s, parser.SkipObjectResolution); err == nil && len(f.Decls) > 0 {
			return s
		}
		// A short variable declaration becomes a var declaration.
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "", "package p;func _(){"+s+"\n}", parser.SkipObjectResolution)
		if err == nil && len(f.Decls) == 1 {
			body := f.Decls[0].(*ast.FuncDecl).Body
			if len(body.List) == 1 {
				if as, ok := body.List[0].(*ast.AssignStmt); ok && as.Tok == token.DEFINE {
					var lhs, rhs []string
					for _, e := range as.Lhs {
						lhs = append(lhs, nodeString(fset, e))
					}
					for _, e := range as.Rhs {
						rhs = append(rhs, nodeString(fset, e))
					}
					if sig := strings.TrimSpace(d.Signature); strings.HasPrefix(sig, "var ") && len(lhs) == 1 && sigHasType(sig) {
						return sig
					}
					return "var " + strings.Join(lhs, ", ") + " = " + strings.Join(rhs, ", ")
				}
			}
		}
	}
	if s := strings.TrimSpace(d.Signature); s != "" {
		if f, err := parser.ParseFile(token.NewFileSet(), "", "package p;"+s, parser.SkipObjectResolution); err == nil && len(f.Decls) > 0 {
			return s
		}
	}
	return ""
}

// withAutoImports adds to the scope's imports the importable packages that
// text uses as "name." without importing them (completion offers their
// members too), unless something else is declared with that name.
func withAutoImports(text string, sd scopeData) scopeData {
	toks := lex(text).toks
	var add map[string]string
	for i, t := range toks {
		if t.tok != token.IDENT || i+1 >= len(toks) || toks[i+1].tok != token.PERIOD || (i > 0 && toks[i-1].tok == token.PERIOD) {
			continue
		}
		if _, ok := sd.imports[t.lit]; ok {
			continue
		}
		if _, ok := sd.decl(t.lit); ok {
			continue
		}
		if ip, ok := packageOperand(t.lit, nil, sd); ok {
			if add == nil {
				add = map[string]string{}
			}
			add[t.lit] = ip
		}
	}
	if add == nil {
		return sd
	}
	for k, v := range sd.imports {
		add[k] = v
	}
	sd.imports = add
	return sd
}

// sigHasType reports whether "var x T" names a type.
func sigHasType(sig string) bool {
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p;"+sig, parser.SkipObjectResolution)
	if err != nil || len(f.Decls) != 1 {
		return false
	}
	gd, ok := f.Decls[0].(*ast.GenDecl)
	if !ok || len(gd.Specs) != 1 {
		return false
	}
	vs, ok := gd.Specs[0].(*ast.ValueSpec)
	return ok && vs.Type != nil
}

// typeCheck parses text (a prepared cell) and type-checks it together with
// the scope's declarations. It returns nil when the check did not finish in
// time or failed outright.
func typeCheck(text string, sd scopeData) *checked {
	imports := importsPrefix(withAutoImports(text, sd))
	p := parseCell(text, lex(text), imports)
	declared := map[string]bool{}
	for _, d := range p.decl.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				declared[d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				if ts, ok := s.(*ast.TypeSpec); ok {
					declared[ts.Name.Name] = true
				}
			}
		}
	}
	var scopeSrc strings.Builder
	scopeSrc.WriteString("package cell;" + imports + "\n")
	seen := map[string]bool{}
	for _, d := range sd.decls {
		if declared[d.Name] {
			continue
		}
		s := declSource(d)
		if s == "" || seen[s] {
			continue
		}
		seen[s] = true
		scopeSrc.WriteString(s)
		scopeSrc.WriteString("\n")
	}
	files := []*ast.File{p.decl, p.body}
	if f, _ := parser.ParseFile(p.fset, "scope.go", scopeSrc.String(), parser.ParseComments|parser.SkipObjectResolution); f != nil {
		files = append(files, f)
	}
	c := &checked{p: p, info: &types.Info{
		Types:      map[ast.Expr]types.TypeAndValue{},
		Defs:       map[*ast.Ident]types.Object{},
		Uses:       map[*ast.Ident]types.Object{},
		Selections: map[*ast.SelectorExpr]*types.Selection{},
	}}
	done := make(chan bool, 1)
	go func() {
		ok := false
		defer func() {
			_ = recover()
			done <- ok
		}()
		typesCache.Lock()
		defer typesCache.Unlock()
		conf := types.Config{Importer: cachedImporter{}, Error: func(error) {}, FakeImportC: true}
		c.pkg, _ = conf.Check("cell", p.fset, files, c.info)
		ok = c.pkg != nil
	}()
	select {
	case ok := <-done:
		if ok {
			return c
		}
	case <-time.After(checkTimeout):
	}
	return nil
}

// inScopeFile reports whether pos lies in the file of earlier cells'
// declarations.
func (c *checked) inScopeFile(pos token.Pos) bool {
	f := c.p.fset.File(pos)
	return f != nil && f.Name() == "scope.go"
}

// selectorAt finds the selector expression whose selected name starts at
// cell offset off.
func (c *checked) selectorAt(off int) *ast.SelectorExpr {
	var found *ast.SelectorExpr
	for _, f := range []*ast.File{c.p.decl, c.p.body} {
		ast.Inspect(f, func(n ast.Node) bool {
			if found != nil {
				return false
			}
			if se, ok := n.(*ast.SelectorExpr); ok && c.p.offset(se.Sel.Pos()) == off {
				found = se
			}
			return true
		})
	}
	return found
}

// identAt finds the identifier starting at cell offset off.
func (c *checked) identAt(off int) *ast.Ident {
	var found *ast.Ident
	for _, f := range []*ast.File{c.p.decl, c.p.body} {
		ast.Inspect(f, func(n ast.Node) bool {
			if found != nil {
				return false
			}
			if id, ok := n.(*ast.Ident); ok && c.p.offset(id.Pos()) == off {
				found = id
			}
			return true
		})
	}
	return found
}

// object returns what the identifier at off denotes.
func (c *checked) object(off int) types.Object {
	id := c.identAt(off)
	if id == nil {
		return nil
	}
	if o := c.info.Uses[id]; o != nil {
		return o
	}
	return c.info.Defs[id]
}

// operandType returns the type of the operand of the selector at off and
// whether the operand denotes a type.
func (c *checked) operandType(off int) (types.Type, bool) {
	se := c.selectorAt(off)
	if se == nil {
		return nil, false
	}
	tv, ok := c.info.Types[se.X]
	if !ok || tv.Type == nil || tv.Type == types.Typ[types.Invalid] {
		return nil, false
	}
	return tv.Type, tv.IsType()
}

// selectable lists the fields and methods that can follow "x." for x of
// type t (or "T." for a type, isType), visible from package from.
func selectable(t types.Type, isType bool, from *types.Package) []types.Object {
	seen := map[string]bool{}
	var out []types.Object
	add := func(o types.Object) {
		if o == nil || seen[o.Name()] || !(o.Exported() || o.Pkg() == from) {
			return
		}
		seen[o.Name()] = true
		out = append(out, o)
	}
	sets := []types.Type{t}
	if _, isPtr := t.Underlying().(*types.Pointer); !isPtr && !types.IsInterface(t) {
		sets = append(sets, types.NewPointer(t))
	}
	for _, st := range sets {
		ms := types.NewMethodSet(st)
		for i := 0; i < ms.Len(); i++ {
			add(ms.At(i).Obj())
		}
	}
	if !isType {
		// Fields, breadth first through embedded structs.
		queue := []types.Type{t}
		visited := map[types.Type]bool{}
		for depth := 0; len(queue) > 0 && depth < 8; depth++ {
			var next []types.Type
			for _, qt := range queue {
				if p, ok := qt.Underlying().(*types.Pointer); ok {
					qt = p.Elem()
				}
				if visited[qt] {
					continue
				}
				visited[qt] = true
				st, ok := qt.Underlying().(*types.Struct)
				if !ok {
					continue
				}
				for i := 0; i < st.NumFields(); i++ {
					f := st.Field(i)
					add(f)
					if f.Embedded() {
						next = append(next, f.Type())
					}
				}
			}
			queue = next
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// qualifier prints package-qualified names relative to the cell.
func qualifier(from *types.Package) types.Qualifier {
	return func(p *types.Package) string {
		if p == from {
			return ""
		}
		return p.Name()
	}
}
