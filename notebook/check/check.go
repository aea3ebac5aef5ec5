package check

import (
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// BodyName is the name of the function that holds a cell's statements in
// the canonical file.
const BodyName = "_gxbody"

// Cell is a checked cell in canonical form: one Go file of package main.
type Cell struct {
	N    int
	Src  string
	Fset *token.FileSet
	// File is the canonical file: imports (the session's that the cell may
	// use and its own), the cell's declarations, the earlier declarations it
	// recompiles, package-level declarations of its hoisted variables, and
	// func _gxbody() holding its statements (absent without statements).
	File *ast.File
	Pkg  *types.Package
	// Scope is the package scope the cell was checked in (Pkg is shared by
	// every cell; its Scope method returns the latest check's).
	Scope *types.Scope
	Info  *types.Info

	// Imports are the imports the cell makes (written or added).
	Imports []*Import
	// AutoImports are the paths added because the cell used them unimported.
	AutoImports []string
	// Decls are the cell's own top-level declarations, in File.
	Decls []ast.Decl
	// Rehomed are earlier declarations recompiled in this cell, each with
	// its declaration in File.
	Rehomed []Rehomed
	// Hoisted are the variables the cell's top-level statements define.
	Hoisted []*Hoisted
	// Body holds the statements; nil when the cell has none.
	Body *ast.FuncDecl
	// Trailing is the last top-level statement when it is an expression:
	// the cell's result.
	Trailing *ast.ExprStmt
	// StmtSpans are the source extents of the top-level statements as
	// written (Body holds their canonical form: a `var x = v` statement has
	// become the assignment x = v, a const declaration an empty statement).
	StmtSpans []Span
	// Main reports that the cell declares func main (run at its end).
	Main bool
	// Warnings are messages for the user that do not stop the cell: at
	// most one line about the earlier declarations it leaves on their old
	// definitions (Kept has the compiler's reason for each).
	Warnings []string
	// Kept says, per earlier declaration left on its old definition, why:
	// recompiling it against this cell fails (for the log).
	Kept []string

	s       *Session
	aliases map[types.Object]*Entry // stand-ins for shadowed session objects
	units   map[ast.Decl]*Unit
	own     map[types.Object]bool // objects the cell's file declares
	texts   map[*token.File]string
}

// Text returns the text a file of the cell's AST was parsed from (the
// cell's code in the layout of one of its parts, or an earlier cell's
// declaration), so that positions index it: Offset(pos) of tf is an index
// into Text(tf).
func (c *Cell) Text(tf *token.File) string { return c.texts[tf] }

// Span is a source extent.
type Span struct{ Pos, End token.Pos }

// Rehomed is an earlier declaration compiled again in a cell.
type Rehomed struct {
	Old  *Entry
	Decl ast.Decl
}

// Hoisted is a variable defined by a top-level statement of a cell.
type Hoisted struct {
	Name string
	Obj  *types.Var
	// Stmt is the index in Body.Body.List of the statement defining it.
	Stmt int
}

// EntryOf returns the session entry an object of c.Info refers to: a
// session object, or the stand-in c uses for a shadowed one. It returns nil
// for the cell's own objects and for everything outside the session.
func (c *Cell) EntryOf(obj types.Object) *Entry {
	if e, ok := c.aliases[obj]; ok {
		return e
	}
	if obj == nil || c.own[obj] {
		return nil
	}
	return c.s.byObj[obj]
}

// Unit returns the source unit of one of c's declarations (its own or
// re-homed).
func (c *Cell) Unit(d ast.Decl) *Unit { return c.units[d] }

// Check type-checks src, the Go code of cell n (magic lines blanked so that
// positions match), against the session. It returns the canonical form of
// the cell, or an *Error with Go's messages. The session is not changed:
// Commit records what ran.
func (s *Session) Check(src string, n int) (*Cell, error) {
	p, perr := parseCell(s.fset, src, n)
	if perr != nil {
		perr.src = src
		return nil, perr
	}
	if err := checkReserved(s.fset, p); err != nil {
		err.src = src
		return nil, err
	}
	newState := func() *state {
		return &state{s: s, src: src, n: n, required: map[*Entry]bool{}, rehome: map[*Entry]bool{}, dropped: map[*Entry]dropNote{}}
	}
	st := newState()
	if err := st.requiredRehomes(p); err != nil {
		err.src = src
		return nil, err
	}
	c, cerr, err := st.settle()
	if err != nil {
		return nil, err
	}
	if cerr == nil {
		return c, nil
	}
	// A cell Go accepts on its own is accepted: an earlier cell's println
	// or close does not take the builtin from it. If it fails that way
	// too, its errors are the session's.
	if s.shadowsPredeclared() {
		retry := newState()
		retry.universe = true
		if retry.requiredRehomes(p) == nil {
			if c, rerr, err := retry.settle(); err == nil && rerr == nil {
				return c, nil
			}
		}
	}
	return nil, cerr
}

// settle checks the cell, round after round, until the session's
// redefinitions settle: imports the cell forgot are added, earlier
// declarations recompiled for it that no longer compile keep their old
// definitions, and dependents of what it changes are recompiled with it.
// A cell Go rejects gives its *Error; err is an internal failure.
func (st *state) settle() (*Cell, *Error, error) {
	for round := 0; ; round++ {
		if round > 64 {
			return nil, nil, errors.New("check: redefinition did not settle (internal error)")
		}
		c, diags := st.checkOnce()
		if c == nil && len(diags) == 0 {
			return nil, nil, errors.New("check: internal error: no result")
		}
		if len(diags) > 0 {
			// Imports the cell forgot.
			if st.autoImport(diags) {
				continue
			}
			// Recompiled dependents that no longer compile keep their
			// old binding.
			if st.dropFailingDependents(diags) {
				continue
			}
			return nil, st.errorOf(diags), nil
		}
		more := st.staleDependents(c)
		if len(more) == 0 {
			if len(st.dropped) > 0 {
				c.Warnings = keptWarning(st.dropped)
				for _, d := range st.dropped {
					c.Kept = append(c.Kept, d.what+": "+d.why)
				}
				sort.Strings(c.Kept)
			}
			return c, nil, nil
		}
		for _, e := range more {
			st.rehome[e] = true
		}
	}
}

// shadowsPredeclared reports whether a binding of the session has the name
// of one of Go's predeclared identifiers.
func (s *Session) shadowsPredeclared() bool {
	for name := range s.names {
		if types.Universe.Lookup(name) != nil {
			return true
		}
	}
	return false
}

// state is one Check in progress.
type state struct {
	s        *Session
	src      string
	n        int
	auto     []string            // auto-imported paths
	required map[*Entry]bool     // types the cell adds methods to (and their methods)
	rehome   map[*Entry]bool     // every earlier entry recompiled (required ones included)
	dropped  map[*Entry]dropNote // dependents left on their old binding
	// imported are the names the cell's own imports bind: the session's
	// bindings of them are not inserted (the newest binding wins).
	imported map[string]bool
	// universe is set for a retry of a cell the session rejects while an
	// earlier cell's declaration shadows a predeclared name (println,
	// close, string): the retry checks the cell with that name meaning
	// Go's own, as a program of the cell alone would.
	universe bool
	// parts of the last round, for errors
	rehomeUnits map[string]*Entry // "cell[N]:line" of a re-homed decl's start → entry
}

func checkReserved(fset *token.FileSet, p *parsed) *Error {
	var diags []Diag
	visit := func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && reserved(id.Name) {
			diags = append(diags, Diag{Pos: fset.Position(id.Pos()), Msg: fmt.Sprintf("%s: names starting with _gx are reserved by goaccel", id.Name)})
		}
		return true
	}
	for _, d := range p.decls {
		ast.Inspect(d, visit)
	}
	for _, st := range p.stmts {
		ast.Inspect(st, visit)
	}
	if len(diags) > 0 {
		return &Error{Cell: p.n, Diags: diags}
	}
	return nil
}

// requiredRehomes finds the earlier types the cell declares methods on:
// Go wants a type's methods in its package, so the type is compiled again
// with all its methods.
func (st *state) requiredRehomes(p *parsed) *Error {
	declared := namesOf(p.decls)
	for _, d := range p.decls {
		_, methods := declaredNames(d)
		for _, m := range methods {
			if declared[m[0]] {
				continue
			}
			t := st.s.names[m[0]]
			if t == nil || t.Kind != TypeEntry {
				continue // go/types reports it
			}
			if t.Unit == nil {
				return &Error{Cell: p.n, Diags: []Diag{{Pos: st.s.fset.Position(d.Pos()),
					Msg: fmt.Sprintf("cannot define new methods on %s: its declaration cannot be recompiled", m[0])}}}
			}
			st.addType(t, true)
		}
	}
	return nil
}

// addType marks a type entry and its current methods for recompiling.
func (st *state) addType(t *Entry, required bool) {
	st.rehome[t] = true
	if required {
		st.required[t] = true
	}
	for _, m := range st.s.methods[t] {
		st.rehome[m] = true
		if required {
			st.required[m] = true
		}
	}
}

// checkOnce parses the cell and its re-homed declarations again and checks
// them; it returns the canonical cell or the diagnostics that matter.
func (st *state) checkOnce() (*Cell, []Diag) {
	s := st.s
	p, perr := parseCell(s.fset, st.src, st.n)
	if perr != nil {
		return nil, perr.Diags
	}
	if d := embedDirectives(st.src, st.n); d != nil {
		return nil, d
	}
	c := &Cell{N: st.n, Src: st.src, Fset: s.fset, s: s, aliases: map[types.Object]*Entry{}, units: map[ast.Decl]*Unit{}, texts: p.texts}
	for d, u := range p.units {
		c.units[d] = u
	}
	c.Decls = p.decls
	decls := append([]ast.Decl(nil), p.decls...)
	st.rehomeUnits = map[string]*Entry{}
	// The names the cell binds itself: its declarations and imports.
	cellNames := namesOf(p.decls)
	for _, g := range p.imports {
		for _, sp := range g.Specs {
			is := sp.(*ast.ImportSpec)
			if is.Name != nil {
				cellNames[is.Name.Name] = true
			} else if path, err := strconv.Unquote(is.Path.Value); err == nil {
				cellNames[s.localName(path)] = true
			}
		}
	}
	for _, e := range st.rehomeList() {
		d, text, err := parseUnit(s.fset, e.Unit)
		if err != nil {
			return nil, []Diag{{Msg: err.Error()}}
		}
		// A declaration recompiled for the cell leaves out what the cell
		// binds anew (a group, the specs): the cell's bindings replace
		// them.
		// The generated code is written from the text: what is left out
		// is blanked there too (lines kept, for positions).
		if gd, ok := d.(*ast.GenDecl); ok && gd.Tok != token.IMPORT {
			tf := s.fset.File(d.Pos())
			gd.Specs = slices.DeleteFunc(gd.Specs, func(sp ast.Spec) bool {
				if !redeclaredSpec(sp, cellNames) {
					return false
				}
				text = blankRange(text, tf.Offset(sp.Pos()), tf.Offset(sp.End()))
				return true
			})
			if len(gd.Specs) == 0 {
				continue
			}
		}
		c.texts[s.fset.File(d.Pos())] = text
		decls = append(decls, d)
		c.units[d] = e.Unit
		c.Rehomed = append(c.Rehomed, Rehomed{Old: e, Decl: d})
		st.rehomeUnits[fmt.Sprintf("%s:%d", FileName(e.Unit.Cell), e.Unit.Line)] = e
	}
	for _, d := range p.decls {
		if isMain(d) {
			c.Main = true
		}
	}

	// Names the file declares itself; session bindings of these names are
	// not inserted.
	own := namesOf(decls)
	var hoistIDs []*ast.Ident
	hoistIdx := map[*ast.Ident]int{}
	for i, stmt := range p.stmts {
		for _, id := range topLevelDefs(stmt) {
			hoistIDs = append(hoistIDs, id)
			hoistIdx[id] = i
		}
	}
	imports, importDiags := st.imports(p, own, nil)
	if len(importDiags) > 0 {
		return nil, importDiags
	}
	c.Imports = imports.cell
	st.imported = map[string]bool{}
	for _, im := range imports.cell {
		if im.Name != "_" && im.Name != "." {
			st.imported[im.Name] = true
		}
	}

	for _, s := range p.stmts {
		c.StmtSpans = append(c.StmtSpans, Span{s.Pos(), s.End()})
	}
	trailing := -1
	if k := len(p.stmts) - 1; k >= 0 {
		if _, ok := p.stmts[k].(*ast.ExprStmt); ok {
			trailing = k
		}
	}

	// Pass 1: statements as a function body (Go's rules for them); it finds
	// the types of the variables they define.
	body := &ast.FuncDecl{Name: ast.NewIdent(BodyName), Type: &ast.FuncType{Func: p.pkgPos, Params: &ast.FieldList{}},
		Body: &ast.BlockStmt{Lbrace: p.pkgPos, List: p.stmts, Rbrace: p.pkgPos}}
	file := st.file(p, imports.specs, decls, nil, body)
	scope1, info1, diags1 := st.typecheck(file, own, nil)
	if scope1 == nil {
		return nil, diags1
	}
	diags1 = st.filter(diags1, p, trailing, hoistIDs, true)
	if len(hoistIDs) == 0 || len(p.stmts) == 0 {
		if len(diags1) > 0 {
			return nil, diags1
		}
		st.finish(c, p, file, scope1, info1, body, trailing, nil)
		return c, nil
	}
	// Statement errors decide here; errors in declarations that use the
	// hoisted names are checked again in pass 2.
	if stmtDiags := inStatements(s.fset, diags1, p); len(stmtDiags) > 0 {
		return nil, append(stmtDiags, notAboutNames(diags1, stmtDiags, hoistIDs)...)
	}

	// Pass 2, canonical: the hoisted variables are package-level, the
	// statements assign them.
	hoistNames := map[string]bool{}
	for _, id := range hoistIDs {
		hoistNames[id.Name] = true
	}
	imports2, _ := st.imports(p, own, hoistNames)
	hoisted, rename := st.hoist(c, p, info1, hoistIDs, hoistIdx, own, imports2.byPath)
	if hoisted.err != nil {
		return nil, []Diag{*hoisted.err}
	}
	for n := range hoistNames {
		own[n] = true
	}
	specs := append(append([]*ast.ImportSpec(nil), imports2.specs...), hoisted.imports...)
	file = st.file(p, specs, decls, hoisted.decls, body)
	scope2, info2, diags2 := st.typecheck(file, own, rename)
	diags2 = st.filter(diags2, p, trailing, nil, false)
	if len(diags2) > 0 {
		return nil, diags2
	}
	for _, h := range hoisted.list {
		h.Obj, _ = scope2.Lookup(h.Name).(*types.Var)
	}
	st.finish(c, p, file, scope2, info2, body, trailing, hoisted.list)
	for alias, e := range rename {
		c.aliases[alias] = e
	}
	return c, nil
}

func (st *state) finish(c *Cell, p *parsed, file *ast.File, scope *types.Scope, info *types.Info, body *ast.FuncDecl, trailing int, hoisted []*Hoisted) {
	c.File, c.Pkg, c.Scope, c.Info = file, st.s.pkg, scope, info
	c.own = map[types.Object]bool{}
	for _, obj := range info.Defs {
		if obj != nil {
			c.own[obj] = true
		}
	}
	if len(p.stmts) > 0 {
		c.Body = body
		if trailing >= 0 {
			c.Trailing = p.stmts[trailing].(*ast.ExprStmt)
		}
	}
	c.Hoisted = hoisted
	c.AutoImports = append([]string(nil), st.auto...)
}

// rehomeList is the re-homed entries in a stable order (types before their
// methods, then by age).
func (st *state) rehomeList() []*Entry {
	var out []*Entry
	for e := range st.rehome {
		if _, gone := st.dropped[e]; gone {
			continue
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// importSet is the imports of the canonical file.
type importSet struct {
	specs  []*ast.ImportSpec
	cell   []*Import
	byPath map[string]string // import path → local name in the file
}

// localName is the name an unnamed import of path binds.
func (s *Session) localName(path string) string {
	if s.conf.Importer != nil {
		if pkg, err := s.conf.Importer.Import(path); err == nil && pkg != nil {
			return pkg.Name()
		}
	}
	base := path[strings.LastIndex(path, "/")+1:]
	return strings.TrimPrefix(strings.TrimSuffix(base, ".go"), "go-")
}

// imports builds the file's imports: the session's (except names the cell
// binds otherwise) and the cell's own, explicit and automatic. Imports whose
// name is in hidden are left out (a hoisted variable takes the name).
func (st *state) imports(p *parsed, own, hidden map[string]bool) (importSet, []Diag) {
	s := st.s
	set := importSet{byPath: map[string]string{}}
	taken := map[string]bool{} // local names of the cell's imports
	paths := map[string]bool{} // paths the cell imports under a name
	dots := map[string]bool{}  // paths the cell dot-imports
	add := func(is *ast.ImportSpec, name, path string) {
		if name == "." {
			dots[path] = true
		}
		if name != "." && name != "_" {
			if hidden[name] {
				return
			}
			taken[name] = true
			paths[path] = true
			if _, ok := set.byPath[path]; !ok {
				set.byPath[path] = name
			}
		}
		set.specs = append(set.specs, is)
	}
	for _, g := range p.imports {
		for _, sp := range g.Specs {
			is := sp.(*ast.ImportSpec)
			path, err := strconv.Unquote(is.Path.Value)
			if err != nil {
				return set, []Diag{{Pos: s.fset.Position(is.Path.Pos()), Msg: "invalid import path: " + is.Path.Value}}
			}
			name := ""
			if is.Name != nil {
				name = is.Name.Name
			}
			local := name
			if local == "" {
				local = s.localName(path)
			}
			set.cell = append(set.cell, &Import{Name: local, Path: path, Cell: st.n})
			add(is, local, path)
		}
	}
	for _, path := range st.auto {
		is := &ast.ImportSpec{Path: &ast.BasicLit{ValuePos: p.pkgPos, Kind: token.STRING, Value: strconv.Quote(path)}}
		local := s.localName(path)
		set.cell = append(set.cell, &Import{Name: local, Path: path, Cell: st.n})
		add(is, local, path)
	}
	for _, im := range s.ImportList() {
		switch {
		case im.Name == "_":
			continue // binds nothing
		case im.Name == ".":
			if dots[im.Path] {
				continue // the cell dot-imports it again: the newest import wins
			}
		case own[im.Name] || taken[im.Name] || hidden[im.Name] || paths[im.Path]:
			continue
		}
		name := &ast.Ident{NamePos: p.pkgPos, Name: im.Name}
		add(&ast.ImportSpec{Name: name, Path: &ast.BasicLit{ValuePos: p.pkgPos, Kind: token.STRING, Value: strconv.Quote(im.Path)}}, im.Name, im.Path)
	}
	return set, nil
}

// file assembles the canonical file from parsed parts.
func (st *state) file(p *parsed, specs []*ast.ImportSpec, decls []ast.Decl, hoisted []ast.Decl, body *ast.FuncDecl) *ast.File {
	f := &ast.File{Package: p.pkgPos, Name: &ast.Ident{NamePos: p.pkgPos, Name: "main"}}
	if len(specs) > 0 {
		g := &ast.GenDecl{TokPos: p.pkgPos, Tok: token.IMPORT, Lparen: p.pkgPos, Rparen: p.pkgPos}
		for _, is := range specs {
			g.Specs = append(g.Specs, is)
		}
		f.Decls = append(f.Decls, g)
		f.Imports = specs
	}
	f.Decls = append(f.Decls, decls...)
	f.Decls = append(f.Decls, hoisted...)
	if len(p.stmts) > 0 {
		f.Decls = append(f.Decls, body)
	}
	return f
}

// typecheck checks file as package main, with the session's bindings of
// every name the file does not declare itself, and extra objects (stand-ins
// for shadowed bindings) in scope.
func (st *state) typecheck(file *ast.File, own map[string]bool, extra map[types.Object]*Entry) (*types.Scope, *types.Info, []Diag) {
	s := st.s
	pkg := s.pkg
	scope, err := newPackageScope(pkg)
	if err != nil {
		return nil, nil, []Diag{{Msg: err.Error()}}
	}
	for name, e := range s.names {
		// A blank declaration binds nothing (in scope, `_` would shadow a
		// blank result parameter).
		if name == "_" || own[name] || st.imported[name] || st.rehome[e] || (st.universe && types.Universe.Lookup(name) != nil) {
			continue
		}
		scope.Insert(e.Obj)
	}
	for obj := range extra {
		scope.Insert(obj)
	}
	if err := adopt(scope, s.byObj, s.parentOffsets); err != nil {
		return nil, nil, []Diag{{Msg: err.Error()}}
	}
	defer parenthesizeForeignRHS(file, own)()
	info := &types.Info{
		Types:        map[ast.Expr]types.TypeAndValue{},
		Instances:    map[*ast.Ident]types.Instance{},
		Defs:         map[*ast.Ident]types.Object{},
		Uses:         map[*ast.Ident]types.Object{},
		Implicits:    map[ast.Node]types.Object{},
		Selections:   map[*ast.SelectorExpr]*types.Selection{},
		Scopes:       map[ast.Node]*types.Scope{},
		FileVersions: map[*ast.File]string{},
	}
	var diags []Diag
	conf := types.Config{
		Importer:  s.conf.Importer,
		GoVersion: s.conf.GoVersion,
		Sizes:     s.conf.Sizes,
		Error: func(err error) {
			var te types.Error
			if errors.As(err, &te) {
				diags = append(diags, Diag{Pos: s.fset.Position(te.Pos), Msg: te.Msg})
				return
			}
			diags = append(diags, Diag{Msg: err.Error()})
		},
	}
	_ = types.NewChecker(&conf, s.fset, pkg, info).Files([]*ast.File{file})
	diags = append(diags, notInHeapReceivers(s.fset, file, info)...)
	diags = append(diags, printOperands(s.fset, file, info)...)
	return scope, info, st.nameCells(diags, file, info)
}

// parenthesizeForeignRHS writes `type A B`, for a B the file does not
// declare, as `type A (B)` until the returned function undoes it: go/types'
// check for cycles of type names follows B into its declaration, which for a
// type of an earlier cell is not part of this check (it crashed); B in
// parentheses ends the walk and means the same.
func parenthesizeForeignRHS(file *ast.File, own map[string]bool) (undo func()) {
	var specs []*ast.TypeSpec
	for _, d := range file.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, sp := range gd.Specs {
			ts := sp.(*ast.TypeSpec)
			if id, ok := ts.Type.(*ast.Ident); ok && !own[id.Name] {
				ts.Type = &ast.ParenExpr{Lparen: id.Pos(), X: id, Rparen: id.End() - 1}
				specs = append(specs, ts)
			}
		}
	}
	return func() {
		for _, ts := range specs {
			ts.Type = ts.Type.(*ast.ParenExpr).X
		}
	}
}

// filter applies the notebook's rules to go/types' messages: imports and
// top-level variables may go unused, and the trailing expression is the
// result.
func (st *state) filter(diags []Diag, p *parsed, trailing int, hoistIDs []*ast.Ident, pass1 bool) []Diag {
	fset := st.s.fset
	hoistAt := map[token.Position]bool{}
	for _, id := range hoistIDs {
		hoistAt[fset.Position(id.Pos())] = true
	}
	var tr ast.Stmt
	if trailing >= 0 {
		tr = p.stmts[trailing]
	}
	var out []Diag
	for _, d := range diags {
		switch {
		case unusedImport.MatchString(d.Msg):
			continue
		case strings.HasPrefix(d.Msg, "declared and not used: ") && hoistAt[d.Pos]:
			continue
		case strings.HasSuffix(d.Msg, " is not used") && tr != nil && within(fset, d.Pos, tr):
			continue
		}
		out = append(out, d)
	}
	return out
}

// unusedImport matches go/types' message for an unused import.
var unusedImport = regexp.MustCompile(`imported (as \S+ )?and not used$`)

// within reports whether pos lies inside node n.
func within(fset *token.FileSet, pos token.Position, n ast.Node) bool {
	a, b := fset.Position(n.Pos()), fset.Position(n.End())
	if pos.Filename != a.Filename {
		return false
	}
	after := pos.Line > a.Line || (pos.Line == a.Line && pos.Column >= a.Column)
	before := pos.Line < b.Line || (pos.Line == b.Line && pos.Column <= b.Column)
	return after && before
}

// inStatements returns the diagnostics located in the cell's statements.
func inStatements(fset *token.FileSet, diags []Diag, p *parsed) []Diag {
	var out []Diag
	for _, d := range diags {
		for _, s := range p.stmts {
			if within(fset, d.Pos, s) {
				out = append(out, d)
				break
			}
		}
	}
	return out
}

// notAboutNames returns the diagnostics not in skip that mention none of
// the names.
func notAboutNames(diags, skip []Diag, ids []*ast.Ident) []Diag {
	seen := map[Diag]bool{}
	for _, d := range skip {
		seen[d] = true
	}
	var out []Diag
next:
	for _, d := range diags {
		if seen[d] {
			continue
		}
		for _, id := range ids {
			if strings.Contains(d.Msg, id.Name) {
				continue next
			}
		}
		out = append(out, d)
	}
	return out
}

// autoImport adds imports for package names the cell used without importing
// them; it reports whether it added any.
func (st *state) autoImport(diags []Diag) bool {
	if st.s.conf.AutoImport == nil && st.s.conf.Resolve == nil {
		return false
	}
	added := false
	tried := map[string]string{} // name → path ("" none) or "!"+error
	for i, d := range diags {
		name, ok := strings.CutPrefix(d.Msg, "undefined: ")
		if !ok || strings.ContainsAny(name, ". ") || st.s.names[name] != nil {
			continue
		}
		if !st.usedAsPackage(name, d.Pos) {
			continue
		}
		path, done := tried[name]
		if !done {
			if st.s.conf.Resolve != nil {
				p, err := st.s.conf.Resolve(name, st.src)
				if err != nil {
					p = "!" + err.Error()
				}
				path = p
			} else {
				path = st.s.conf.AutoImport(name)
			}
			tried[name] = path
		}
		if msg, bad := strings.CutPrefix(path, "!"); bad {
			diags[i].Msg = msg
			continue
		}
		if path == "" {
			continue
		}
		dup := false
		for _, p := range st.auto {
			dup = dup || p == path
		}
		if !dup {
			st.auto = append(st.auto, path)
			added = true
		}
	}
	return added
}

// usedAsPackage reports whether the identifier at pos is followed by a dot
// in the cell's source (name.Sel).
func (st *state) usedAsPackage(name string, pos token.Position) bool {
	if pos.Filename != FileName(st.n) {
		return false
	}
	lines := strings.Split(st.src, "\n")
	if pos.Line < 1 || pos.Line > len(lines) {
		return false
	}
	l := lines[pos.Line-1]
	i := pos.Column - 1 + len(name)
	return pos.Column >= 1 && i < len(l) && l[pos.Column-1:i] == name && l[i] == '.'
}

// dropFailingDependents leaves re-homed dependents that no longer compile
// on their old binding. It reports whether it dropped any; errors in the
// cell itself, or in a declaration it must recompile, are left to the
// caller.
func (st *state) dropFailingDependents(diags []Diag) bool {
	dropped := false
	for _, d := range diags {
		if d.Pos.Filename == FileName(st.n) {
			return false // the cell's own error
		}
		e := st.rehomedAt(d.Pos)
		if e == nil || st.required[e] {
			return false
		}
		if _, done := st.dropped[e]; done {
			continue
		}
		// A method cannot be left behind alone: its type goes back too
		// (unless the method was being carried to a type the cell
		// redefines: then it just does not come along).
		victims := []*Entry{e}
		if e.Kind == MethodEntry && e.Recv != nil && !st.rehome[e.Recv] {
			st.dropped[e] = dropNote{what: describe(e), notCarried: e.Recv.Name, why: d.String()}
			dropped = true
			continue
		}
		if e.Kind == MethodEntry && e.Recv != nil {
			victims = append(victims, e.Recv)
			for _, m := range st.s.methods[e.Recv] {
				victims = append(victims, m)
			}
		}
		for _, v := range victims {
			if st.required[v] {
				return false
			}
		}
		for _, v := range victims {
			st.dropped[v] = dropNote{what: describe(v), why: d.String()}
		}
		dropped = true
	}
	return dropped
}

// rehomedAt finds the re-homed entry whose declaration contains pos.
func (st *state) rehomedAt(pos token.Position) *Entry {
	var best *Entry
	bestLine := -1
	for key, e := range st.rehomeUnits {
		if !strings.HasPrefix(key, pos.Filename+":") {
			continue
		}
		line, _ := strconv.Atoi(strings.TrimPrefix(key, pos.Filename+":"))
		end := line + strings.Count(e.Unit.Src, "\n")
		if pos.Line >= line && pos.Line <= end && line > bestLine {
			best, bestLine = e, line
		}
	}
	return best
}

func describe(e *Entry) string {
	if e.Kind == MethodEntry && e.Recv != nil {
		return fmt.Sprintf("method %s.%s (cell[%d])", e.Recv.Name, e.Name, unitCell(e))
	}
	return fmt.Sprintf("%s %s (cell[%d])", e.Kind, e.Name, unitCell(e))
}

func unitCell(e *Entry) int {
	if e.Unit != nil {
		return e.Unit.Cell
	}
	return e.Cell
}

// errorOf turns diagnostics into the cell's error.
func (st *state) errorOf(diags []Diag) *Error {
	sortDiags(diags)
	e := &Error{Cell: st.n, Diags: dedupe(diags), src: st.src}
	var names []string
	for _, d := range e.Diags {
		if d.Pos.Filename != FileName(st.n) {
			if r := st.rehomedAt(d.Pos); r != nil {
				names = append(names, describe(r))
			}
		}
	}
	if len(names) > 0 {
		e.Note = "(" + strings.Join(uniq(names), ", ") + " is compiled again with this cell because it depends on what the cell changes)"
	}
	return e
}

func dedupe(ds []Diag) []Diag {
	seen := map[string]bool{}
	var out []Diag
	for _, d := range ds {
		k := d.String()
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, d)
	}
	return out
}

func uniq(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// embedDirectives refuses //go:embed: a cell has no package directory for
// its patterns to be relative to, and the generated package would embed
// nothing — a silently empty variable. The message says what to do instead.
func embedDirectives(src string, n int) []Diag {
	var diags []Diag
	for i, line := range strings.Split(src, "\n") {
		trimmed := strings.TrimLeft(line, " \t")
		if strings.HasPrefix(trimmed, "//go:embed") {
			diags = append(diags, Diag{
				Pos: token.Position{Filename: FileName(n), Line: i + 1, Column: len(line) - len(trimmed) + 1},
				Msg: "//go:embed is not supported in notebook cells (a cell has no package directory to embed files from): read the files with os.ReadFile or os.DirFS",
			})
		}
	}
	return diags
}

// redeclaredSpec reports whether every name a type, const or var spec
// declares is in names.
func redeclaredSpec(sp ast.Spec, names map[string]bool) bool {
	switch sp := sp.(type) {
	case *ast.TypeSpec:
		return names[sp.Name.Name]
	case *ast.ValueSpec:
		for _, n := range sp.Names {
			if !names[n.Name] {
				return false
			}
		}
		return len(sp.Names) > 0
	}
	return false
}

// blankRange replaces text[from:to] by spaces, keeping its line breaks.
func blankRange(text string, from, to int) string {
	if from < 0 || to > len(text) || from >= to {
		return text
	}
	b := []byte(text)
	for i := from; i < to; i++ {
		if b[i] != '\n' {
			b[i] = ' '
		}
	}
	return string(b)
}
