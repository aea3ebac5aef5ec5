package notebook

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"image"
	"path"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/traefik/yaegi/interp"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook/cells"
)

// parsedCell is a cell cut into its three parsed parts.
type parsedCell struct {
	src     string // the cell's Go code (magic lines blanked)
	fname   string // position file name: "cell[N]/_.go"
	units   []cells.Unit
	imports *ast.File // nil when the cell has no imports
	decls   *ast.File
	body    *ast.BlockStmt
	file    *token.File // of body, for offsets
	// prefix lengths of the parsed texts, to map offsets back to src
	declFile, importFile *token.File
}

const (
	filePrefixFmt = "package main\n//line %s:1:1\n"
	bodyPrefixFmt = "package main\nfunc main() {\n//line %s:1:1\n"
)

// cellFileName is the position file name of cell n. Its base must be "_.go"
// for every cell: yaegi keys imports by the base name of the file, and all
// cells share one set of imports.
func cellFileName(n int) string { return fmt.Sprintf("cell[%d]/_.go", n) }

// parseCell splits and parses src; positions in errors are the cell's own.
func (e *Engine) parseCell(fset *token.FileSet, src string, n int) (*parsedCell, *frontend.Error) {
	pc := &parsedCell{src: src, fname: cellFileName(n)}
	pc.units = cells.Split(src)
	// A var or const after a statement stays with the statements (it may
	// use what they defined).
	seenStmt := false
	for i, u := range pc.units {
		if u.Kind == cells.Stmt {
			seenStmt = true
		}
		if u.Kind == cells.Decl && seenStmt && (u.Tok == token.VAR || u.Tok == token.CONST) {
			pc.units[i].Kind = cells.Stmt
		}
	}
	has := map[cells.Kind]bool{}
	for _, u := range pc.units {
		has[u.Kind] = true
	}
	mode := parser.DeclarationErrors | parser.ParseComments
	var err error
	if has[cells.Import] {
		text := fmt.Sprintf(filePrefixFmt, pc.fname) + cells.Blank(src, pc.units, func(u cells.Unit) bool { return u.Kind == cells.Import })
		if pc.imports, err = parser.ParseFile(fset, "_.go", text, mode); err != nil {
			return nil, compileError(err, src)
		}
		pc.importFile = fset.File(pc.imports.Pos())
	}
	if has[cells.Decl] {
		text := fmt.Sprintf(filePrefixFmt, pc.fname) + cells.Blank(src, pc.units, func(u cells.Unit) bool { return u.Kind == cells.Decl })
		if pc.decls, err = parser.ParseFile(fset, "_.go", text, mode); err != nil {
			return nil, compileError(err, src)
		}
		pc.declFile = fset.File(pc.decls.Pos())
	}
	if has[cells.Stmt] {
		text := fmt.Sprintf(bodyPrefixFmt, pc.fname) + cells.Blank(src, pc.units, func(u cells.Unit) bool { return u.Kind == cells.Stmt }) + "\n}\n"
		f, err := parser.ParseFile(fset, "_.go", text, mode)
		if err != nil {
			return nil, compileError(err, src)
		}
		if len(f.Decls) != 1 {
			return nil, &frontend.Error{Name: "SyntaxError", Value: pc.fname + ": unbalanced braces in the cell"}
		}
		fd, ok := f.Decls[0].(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			return nil, &frontend.Error{Name: "SyntaxError", Value: "unbalanced braces in the cell"}
		}
		pc.body = fd.Body
		pc.file = fset.File(f.Pos())
	}
	return pc, nil
}

// text returns the cell source of node n parsed in file f.
func (pc *parsedCell) text(f *token.File, from, to token.Pos) string {
	if f == nil || !from.IsValid() || !to.IsValid() {
		return ""
	}
	a, b := f.Offset(from), f.Offset(to)
	// Offsets count the prefix; the prefix is everything before the //line
	// directive's line, so find the cell's start from the line table.
	start := f.LineStart(3)
	if pc.body != nil && f == pc.file {
		start = f.LineStart(4)
	}
	base := f.Offset(start)
	a, b = max(a-base, 0), b-base // a doc comment may start with the //line directive
	if b > len(pc.src) || a > b {
		return ""
	}
	return pc.src[a:b]
}

// compileFn compiles a node, turning yaegi's internal panics into errors.
func compileAST(it *interp.Interpreter, n ast.Node) (prog *interp.Program, err error) {
	defer func() {
		if r := recover(); r != nil {
			prog, err = nil, fmt.Errorf("goaccel: the interpreter failed on this code (%v); this construct may be unsupported by yaegi, see LANGUAGE.md", r)
		}
	}()
	return it.CompileAST(n)
}

// runProgram executes prog, cancellably.
func (e *Engine) runProgram(ctx context.Context, it *interp.Interpreter, prog *interp.Program) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = interp.Panic{Value: r}
		}
	}()
	_, err = it.ExecuteWithContext(ctx, prog)
	if ctx.Err() != nil {
		// ExecuteWithContext returns at once on cancel while its goroutine
		// is still unwinding (it stops at its next step); let it finish
		// before the interpreter is used again.
		time.Sleep(interruptSettle)
	}
	return err
}

// interruptSettle is how long an interrupted cell's interpreter goroutine is
// given to stop before the next use of the interpreter.
const interruptSettle = 50 * time.Millisecond

// runCell runs the Go code of a cell and returns the trailing expression's
// MIME bundle (nil when there is none).
func (e *Engine) runCell(ctx context.Context, cs *cellState, src string) (frontend.MIMEBundle, *frontend.Error) {
	e.mu.RLock()
	it := e.it
	e.mu.RUnlock()
	fset := it.FileSet()
	pc, ferr := e.parseCell(fset, src, cs.count)
	if ferr != nil {
		return nil, ferr
	}
	rw := newRewriter(e, it, pc)

	// Names declared at top level by this cell.
	cellNames := map[string]bool{}
	if pc.decls != nil {
		for _, d := range pc.decls.Decls {
			for _, n := range declNames(d) {
				cellNames[n] = true
			}
		}
	}
	if pc.body != nil {
		for _, st := range pc.body.List {
			for _, n := range stmtNames(st) {
				cellNames[n] = true
			}
		}
	}
	rw.cellNames = cellNames

	// 1. Imports, the explicit ones and those the cell uses without
	// writing them.
	specs, ferr := e.newImports(pc)
	if ferr != nil {
		return nil, ferr
	}
	auto := e.autoImports(pc, specs, cellNames)
	if len(specs)+len(auto) > 0 {
		all := append(append([]*ast.ImportSpec(nil), specs...), auto...)
		// One import at a time: yaegi registers the packages of an import
		// block before it finds a bad path in it, so a failed block would
		// leave good imports registered but unrecorded ("redeclared" on
		// every later import of them).
		for _, spec := range all {
			gen := &ast.GenDecl{Tok: token.IMPORT, Lparen: 1, Rparen: 1, Specs: []ast.Spec{spec}}
			f := &ast.File{Name: ast.NewIdent("main"), Decls: []ast.Decl{gen}, Package: pcPos(pc)}
			prog, err := compileAST(it, f)
			if err == nil {
				err = e.runProgram(ctx, it, prog)
			}
			if err != nil {
				ferr := e.toError(err, pc.src, "ImportError")
				if strings.Contains(ferr.Value, "unable to find source related to") {
					path, _ := strconv.Unquote(spec.Path.Value)
					ferr.Value = fmt.Sprintf("package %q is not available in cells: they can import the standard library, gonum (mat, floats, stat) and goaccel's packages; other modules would have to be compiled into the kernel", path)
				}
				return nil, ferr
			}
			e.mu.Lock()
			p, _ := strconv.Unquote(spec.Path.Value)
			name := e.importNameLocked(spec)
			if name != "_" && name != "." {
				e.imports[name] = p
			}
			srcText := pc.text(pc.importFile, spec.Pos(), spec.End())
			if srcText == "" {
				srcText = importSource(spec)
			} else {
				srcText = "import " + srcText
			}
			e.logDecl(Declaration{Kind: KindImport, Name: name, Source: srcText, Path: p, Cell: cs.count})
			e.mu.Unlock()
		}
		for _, s := range auto {
			e.out.write("stderr", []byte(fmt.Sprintf("goaccel: added import %s\n", s.Path.Value)))
		}
	}

	// yaegi v0.16.1 mishandles package-level var initializers that use
	// variables of earlier cells ("variable definition loop"), and interface
	// vars initialized there. So var and const declarations run as
	// statements (which yaegi also makes globals), first in the block, unless
	// this cell's functions or types refer to them.
	moved := e.moveVars(pc)

	// 2. Declarations, as one file.
	if pc.decls != nil && len(pc.decls.Decls) > 0 {
		if ferr := e.runDecls(ctx, it, pc, rw, cs); ferr != nil {
			return nil, ferr
		}
	}

	// 3. Statements, as one block.
	if pc.body == nil && !rw.definesMain {
		return nil, nil
	}
	body := pc.body
	if body == nil {
		body = &ast.BlockStmt{}
	}
	if err := rw.rewriteBody(body); err != nil {
		return nil, err
	}
	// Log entries for what the statements define, taken from the source
	// before yaegi sees the AST; logged when the cell succeeds.
	var bodyPending []Declaration
	for _, st := range body.List {
		names := stmtNames(st)
		if len(names) == 0 {
			continue
		}
		if moved[st] {
			bodyPending = append(bodyPending, genDecls(pc, pc.declFile, st.(*ast.DeclStmt).Decl.(*ast.GenDecl), cs.count)...)
			continue
		}
		text := pc.text(pc.file, st.Pos(), st.End())
		if text == "" {
			continue
		}
		kind := KindVar
		if ds, ok := st.(*ast.DeclStmt); ok {
			if g, ok := ds.Decl.(*ast.GenDecl); ok && g.Tok == token.CONST {
				kind = KindConst
			}
		}
		for _, n := range names {
			bodyPending = append(bodyPending, Declaration{Kind: kind, Name: n, Names: []string{n}, Source: text, FromStatement: true, Cell: cs.count})
		}
	}

	// The trailing expression: try, in order, a single value (assigned to
	// the global _gxv, then formatted by showProbes), several values
	// (_gxShow(f())), and no value (a call run as a statement).
	var trailing ast.Expr
	mode := showNone
	if n := len(body.List); n > 0 && !rw.definesMain {
		if es, ok := body.List[n-1].(*ast.ExprStmt); ok {
			trailing = es.X
		}
	}
	if rw.definesMain {
		body.List = append(body.List, &ast.ExprStmt{X: &ast.CallExpr{Fun: ast.NewIdent(mainName)}})
	}
	var prog *interp.Program
	var err error
	if trailing != nil {
		last := len(body.List) - 1
		variants := []struct {
			mode showMode
			st   ast.Stmt
		}{
			{showSingle, &ast.AssignStmt{Lhs: []ast.Expr{ast.NewIdent("_gxv")}, Tok: token.DEFINE, TokPos: trailing.Pos(), Rhs: []ast.Expr{trailing}}},
			{showMulti, &ast.ExprStmt{X: &ast.CallExpr{Fun: ast.NewIdent("_gxShow"), Args: []ast.Expr{trailing}}}},
			{showNone, &ast.ExprStmt{X: trailing}},
		}
		if e.quietCall(pc, trailing) {
			variants = variants[2:]
		} else {
			switch resultCount(e, pc, trailing) {
			case 0:
				variants = variants[2:]
			case -1, 1:
			default:
				variants = variants[1:]
			}
		}
		// First the plain statement: yaegi accepts `_gxv := undefinedName`
		// silently, so errors are taken from the plain form.
		body.List[last] = &ast.ExprStmt{X: trailing}
		if e.namesKnown(it, trailing, rw.cellNames) {
			err = nil // nothing yaegi could silently accept: skip the plain compile
		} else {
			_, err = compileAST(it, body)
		}
		if err == nil {
			for _, v := range variants {
				body.List[last] = v.st
				prog, err = compileAST(it, body)
				if err == nil {
					mode = v.mode
					break
				}
			}
		}
	} else {
		prog, err = compileAST(it, body)
	}
	if err != nil {
		return nil, e.toError(err, pc.src, "CompileError")
	}
	cs.takeResult()
	if err := e.runProgram(ctx, it, prog); err != nil {
		if isCtxErr(err) {
			return nil, errInterrupted()
		}
		return nil, e.toError(err, pc.src, "")
	}
	e.mu.Lock()
	for _, d := range bodyPending {
		e.logDecl(d)
	}
	e.mu.Unlock()
	if perr := goPanicError(cs); perr != nil {
		return nil, perr
	}
	if ctx.Err() != nil {
		return nil, errInterrupted()
	}
	switch mode {
	case showSingle:
		e.showValue(ctx, it, cs)
	case showMulti:
	default:
		return nil, nil
	}
	return cs.takeResult(), nil
}

type showMode int

const (
	showNone showMode = iota
	showSingle
	showMulti
)

// showValue formats _gxv into the cell's result with showProbes.
func (e *Engine) showValue(ctx context.Context, it *interp.Interpreter, cs *cellState) {
	jsonText, text := false, false
	if t, ok := e.textWithoutProbe(it); ok {
		cs.setResult("text/plain", t)
		text = true
	}
	skip := e.probeFilter(it)
	for i, probe := range showProbes {
		if skip(probe) {
			continue
		}
		if jsonText && strings.Contains(probe, "_gxrt.JSON(") {
			continue
		}
		if text && strings.HasPrefix(probe, "_gxrt.Text(") {
			continue
		}
		src := fmt.Sprintf(bodyPrefixFmt, "goaccel/_.go") + probe + "\n}\n"
		f, err := parser.ParseFile(it.FileSet(), "_.go", src, 0)
		if err != nil {
			continue
		}
		prog, err := compileAST(it, f.Decls[0].(*ast.FuncDecl).Body)
		if err != nil {
			continue
		}
		cs.takeTrace()
		err = e.runProgram(ctx, it, prog)
		if strings.HasPrefix(probe, "_gxrt.Text(") {
			if err != nil && i > 0 {
				cs.setResult("text/plain", "<value could not be formatted: "+err.Error()+">")
			}
			text = err == nil || i > 0
		}
		cs.takeTrace()
		if strings.Contains(probe, "JSONText") && err == nil {
			jsonText = true
		}
	}
}

// goPanicError turns panics reported by the cell's goroutines into an error.
func goPanicError(cs *cellState) *frontend.Error {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if len(cs.goPanics) == 0 {
		return nil
	}
	tb := append([]string(nil), cs.goPanics...)
	for _, l := range cs.trace {
		tb = append(tb, "    "+mapPositions(l))
	}
	cs.trace = nil
	return &frontend.Error{Name: "panic", Value: cs.goPanics[0], Traceback: tb}
}

// pcPos returns a position in the cell's parsed files before the //line
// directive: its file name's base is "_.go", which yaegi uses to key imports.
func pcPos(pc *parsedCell) token.Pos {
	switch {
	case pc.imports != nil:
		return pc.imports.Package
	case pc.decls != nil:
		return pc.decls.Package
	case pc.file != nil:
		return token.Pos(pc.file.Base())
	}
	return token.NoPos
}

// runDecls compiles and runs the cell's declarations and logs them.
func (e *Engine) runDecls(ctx context.Context, it *interp.Interpreter, pc *parsedCell, rw *rewriter, cs *cellState) *frontend.Error {
	f := pc.decls
	type typeDef struct{ name, canon string }
	var newTypes []typeDef
	// Type redefinitions: identical ones are dropped, changed ones refused.
	kept := f.Decls[:0]
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.TYPE {
			kept = append(kept, d)
			continue
		}
		specs := g.Specs[:0]
		for _, s := range g.Specs {
			ts := s.(*ast.TypeSpec)
			canon := canonical(ts)
			e.mu.RLock()
			old, exists := e.types[ts.Name.Name]
			e.mu.RUnlock()
			if exists && old == canon {
				continue
			}
			if exists {
				p := it.FileSet().Position(ts.Pos())
				msg := fmt.Sprintf("%s: type %s is already defined with a different definition; yaegi cannot redefine types — use %%reset (clears all state) or a new name",
					shortPos(p), ts.Name.Name)
				return &frontend.Error{Name: "CompileError", Value: msg, Traceback: append([]string{msg}, sourceLines(pc.src, p.Line, p.Column)...)}
			}
			newTypes = append(newTypes, typeDef{ts.Name.Name, canon})
			specs = append(specs, s)
		}
		g.Specs = specs
		if len(specs) > 0 {
			kept = append(kept, g)
		}
	}
	f.Decls = kept
	if len(f.Decls) == 0 {
		return nil
	}
	// The log entries are taken from the source before yaegi sees the AST.
	var pending []Declaration
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			from := d.Pos()
			if d.Doc != nil {
				from = d.Doc.Pos()
			}
			text := pc.text(pc.declFile, from, d.End())
			name := d.Name.Name
			kind := KindFunc
			if d.Recv != nil && len(d.Recv.List) > 0 {
				kind = KindMethod
				name = recvTypeName(d.Recv.List[0].Type) + "." + name
			}
			pending = append(pending, Declaration{Kind: kind, Name: name, Source: text, Cell: cs.count})
		case *ast.GenDecl:
			pending = append(pending, genDecls(pc, pc.declFile, d, cs.count)...)
		}
	}
	if err := rw.rewriteFile(f); err != nil {
		return err
	}
	prog, err := compileAST(it, f)
	if err == nil {
		err = e.runProgram(ctx, it, prog)
	}
	if err != nil {
		if isCtxErr(err) {
			return errInterrupted()
		}
		return e.toError(err, pc.src, "CompileError")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, t := range newTypes {
		e.types[t.name] = t.canon
	}
	for _, d := range pending {
		e.logDecl(d)
	}
	return nil
}

// genDecls returns the log entries of a type, var or const declaration,
// one per spec.
func genDecls(pc *parsedCell, file *token.File, d *ast.GenDecl, count int) (out []Declaration) {
	for _, s := range d.Specs {
		var body string
		if d.Lparen == token.NoPos {
			from := d.Pos()
			if d.Doc != nil {
				from = d.Doc.Pos()
			}
			body = pc.text(file, from, d.End())
		} else {
			body = d.Tok.String() + " " + pc.text(file, s.Pos(), s.End())
		}
		switch s := s.(type) {
		case *ast.TypeSpec:
			out = append(out, Declaration{Kind: KindType, Name: s.Name.Name, Source: body, Cell: count})
		case *ast.ValueSpec:
			kind := KindVar
			if d.Tok == token.CONST {
				kind = KindConst
			}
			var names []string
			for _, n := range s.Names {
				if n.Name != "_" {
					names = append(names, n.Name)
				}
			}
			if len(names) == 0 {
				continue
			}
			out = append(out, Declaration{Kind: kind, Name: names[0], Names: names, Source: body, Cell: count})
		}
	}
	return out
}

func recvTypeName(x ast.Expr) string {
	for {
		switch t := x.(type) {
		case *ast.StarExpr:
			x = t.X
		case *ast.ParenExpr:
			x = t.X
		case *ast.IndexExpr:
			x = t.X
		case *ast.IndexListExpr:
			x = t.X
		case *ast.Ident:
			return t.Name
		default:
			return "?"
		}
	}
}

// canonical is a type definition's text, independent of layout.
func canonical(ts *ast.TypeSpec) string {
	var b bytes.Buffer
	cp := *ts
	cp.Doc, cp.Comment = nil, nil
	if err := printer.Fprint(&b, token.NewFileSet(), &cp); err != nil {
		return fmt.Sprintf("%p", ts)
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// newImports returns the cell's import specs that are not imported yet.
func (e *Engine) newImports(pc *parsedCell) ([]*ast.ImportSpec, *frontend.Error) {
	if pc.imports == nil {
		return nil, nil
	}
	var specs []*ast.ImportSpec
	seen := map[string]string{}
	e.mu.RLock()
	defer e.mu.RUnlock()
	for _, s := range pc.imports.Imports {
		p, err := strconv.Unquote(s.Path.Value)
		if err != nil {
			continue
		}
		name := e.importNameLocked(s)
		if name == "_" || name == "." {
			dup := false
			for _, d := range e.decls {
				if d.Kind == KindImport && d.Name == name && d.Path == p {
					dup = true
				}
			}
			if !dup {
				specs = append(specs, s)
			}
			continue
		}
		old, ok := e.imports[name]
		if !ok {
			old, ok = seen[name]
		}
		if ok {
			if old == p {
				continue // re-import: dropped silently
			}
			pos := e.it.FileSet().Position(s.Pos())
			msg := fmt.Sprintf("%s: %s is already imported as %q; import %q under another name (import x %q) or use %%reset",
				shortPos(pos), name, old, p, p)
			return nil, &frontend.Error{Name: "ImportError", Value: msg, Traceback: append([]string{msg}, sourceLines(pc.src, pos.Line, pos.Column)...)}
		}
		seen[name] = p
		specs = append(specs, s)
	}
	return specs, nil
}

func (e *Engine) importName(s *ast.ImportSpec) string {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.importNameLocked(s)
}

func (e *Engine) importNameLocked(s *ast.ImportSpec) string {
	if s.Name != nil {
		return s.Name.Name
	}
	p, _ := strconv.Unquote(s.Path.Value)
	if n, ok := e.pkgName[p]; ok {
		return n
	}
	base := path.Base(p)
	if len(base) > 1 && base[0] == 'v' && strings.Trim(base[1:], "0123456789") == "" {
		base = path.Base(path.Dir(p))
	}
	return strings.TrimPrefix(strings.TrimSuffix(base, ".go"), "go-")
}

func importSource(s *ast.ImportSpec) string {
	if s.Name != nil {
		return "import " + s.Name.Name + " " + s.Path.Value
	}
	return "import " + s.Path.Value
}

// preferredImport resolves package names that several standard packages
// share.
var preferredImport = map[string]string{
	"rand":     "math/rand",
	"template": "text/template",
	"scanner":  "text/scanner",
	"pprof":    "runtime/pprof",
	"parser":   "go/parser",
	"big":      "math/big",
	"cmplx":    "math/cmplx",
}

// autoImports finds packages the cell uses (pkg.Name) without importing or
// declaring pkg, and returns import specs for those in the symbol tables.
func (e *Engine) autoImports(pc *parsedCell, explicit []*ast.ImportSpec, cellNames map[string]bool) []*ast.ImportSpec {
	byName := e.importablePackages()
	e.mu.RLock()
	imported := map[string]bool{}
	for n := range e.imports {
		imported[n] = true
	}
	e.mu.RUnlock()
	for _, s := range explicit {
		imported[e.importName(s)] = true
	}
	if pc.imports != nil {
		for _, s := range pc.imports.Imports {
			imported[e.importName(s)] = true
		}
	}
	want := map[string]bool{}
	visit := func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok || id.Obj != nil {
			return true
		}
		name := id.Name
		if imported[name] || cellNames[name] || want[name] || isUniverse(name) {
			return true
		}
		if _, ok := byName[name]; ok && !e.hasName(name) {
			want[name] = true
		}
		return true
	}
	if pc.decls != nil {
		ast.Inspect(pc.decls, visit)
	}
	if pc.body != nil {
		if pc.body != nil {
			ast.Inspect(pc.body, visit)
		}
	}
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	var specs []*ast.ImportSpec
	for _, n := range names {
		specs = append(specs, &ast.ImportSpec{Path: &ast.BasicLit{Kind: token.STRING, Value: strconv.Quote(byName[n])}})
	}
	return specs
}

func isUniverse(name string) bool {
	switch name {
	case "bool", "byte", "complex64", "complex128", "error", "float32", "float64", "int", "int8", "int16",
		"int32", "int64", "rune", "string", "uint", "uint8", "uint16", "uint32", "uint64", "uintptr", "any",
		"true", "false", "iota", "nil", "append", "cap", "close", "complex", "copy", "delete", "imag", "len",
		"make", "new", "panic", "print", "println", "real", "recover", "min", "max", "clear", "comparable":
		return true
	}
	return false
}

// declNames lists the names a top-level declaration declares.
func declNames(d ast.Decl) []string {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil {
			return []string{d.Name.Name}
		}
	case *ast.GenDecl:
		var out []string
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				out = append(out, s.Name.Name)
			case *ast.ValueSpec:
				for _, n := range s.Names {
					out = append(out, n.Name)
				}
			}
		}
		return out
	}
	return nil
}

// stmtNames lists the names a top-level statement defines (which yaegi
// makes globals): x := ..., var x ..., const x = ...
func stmtNames(st ast.Stmt) []string {
	var out []string
	switch st := st.(type) {
	case *ast.AssignStmt:
		if st.Tok == token.DEFINE {
			for _, l := range st.Lhs {
				if id, ok := l.(*ast.Ident); ok && id.Name != "_" && !strings.HasPrefix(id.Name, "_gx") {
					out = append(out, id.Name)
				}
			}
		}
	case *ast.DeclStmt:
		if g, ok := st.Decl.(*ast.GenDecl); ok && g.Tok != token.TYPE {
			for _, n := range declNames(g) {
				if n != "_" {
					out = append(out, n)
				}
			}
		}
	}
	return out
}

// evalExpr evaluates one expression (user_expressions) and returns its
// MIME bundle, formatted as a cell's trailing expression is.
func (e *Engine) evalExpr(ctx context.Context, cs *cellState, expr string) (frontend.MIMEBundle, *frontend.Error) {
	e.mu.RLock()
	it := e.it
	e.mu.RUnlock()
	if strings.Contains(expr, "\n") {
		return nil, &frontend.Error{Name: "SyntaxError", Value: "a user expression must be one line: " + expr}
	}
	var lastErr error
	for _, v := range []struct {
		mode showMode
		code string
	}{{showSingle, "_gxv := " + expr}, {showMulti, "_gxShow(" + expr + ")"}} {
		text := fmt.Sprintf(bodyPrefixFmt, "user_expression/_.go") + v.code + "\n}\n"
		f, err := parser.ParseFile(it.FileSet(), "_.go", text, 0)
		if err != nil {
			return nil, compileError(err, expr)
		}
		body := f.Decls[0].(*ast.FuncDecl).Body
		if len(body.List) != 1 {
			return nil, &frontend.Error{Name: "SyntaxError", Value: "not a single expression: " + expr}
		}
		prog, err := compileAST(it, body)
		if err != nil {
			lastErr = err
			continue
		}
		cs.takeResult()
		if err := e.runProgram(ctx, it, prog); err != nil {
			if isCtxErr(err) {
				return nil, errInterrupted()
			}
			return nil, e.toError(err, expr, "")
		}
		if v.mode == showSingle {
			e.showValue(ctx, it, cs)
		}
		return cs.takeResult(), nil
	}
	return nil, e.toError(lastErr, expr, "CompileError")
}

// moveVars moves the cell's var and const declarations that no function or
// type of the cell refers to into the front of the statement block.
func (e *Engine) moveVars(pc *parsedCell) map[ast.Stmt]bool {
	if pc.decls == nil {
		return nil
	}
	isVal := func(d ast.Decl) (*ast.GenDecl, bool) {
		g, ok := d.(*ast.GenDecl)
		return g, ok && (g.Tok == token.VAR || g.Tok == token.CONST)
	}
	refs := map[string]bool{}
	for _, d := range pc.decls.Decls {
		if _, ok := isVal(d); ok {
			continue
		}
		ast.Inspect(d, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				refs[id.Name] = true
			}
			return true
		})
	}
	moved := map[ast.Stmt]bool{}
	var stmts []ast.Stmt
	kept := pc.decls.Decls[:0]
	for _, d := range pc.decls.Decls {
		g, ok := isVal(d)
		if ok {
			used := false
			for _, n := range declNames(g) {
				used = used || refs[n]
			}
			if !used {
				st := &ast.DeclStmt{Decl: g}
				moved[st] = true
				stmts = append(stmts, st)
				continue
			}
		}
		kept = append(kept, d)
	}
	pc.decls.Decls = kept
	if len(stmts) > 0 {
		if pc.body == nil {
			pc.body = &ast.BlockStmt{Lbrace: pcPos(pc)}
		}
		pc.body.List = append(stmts, pc.body.List...)
	}
	return moved
}

// resultCount returns how many results a call returns when it can tell
// (functions of this or earlier cells, functions of compiled packages), or
// -1. yaegi v0.16.1 accepts `v := f()` for an f with two results, so the
// count must be known before choosing how to show the value.
func resultCount(e *Engine, pc *parsedCell, x ast.Expr) int {
	call, ok := x.(*ast.CallExpr)
	if !ok {
		return -1
	}
	fields := func(ft *ast.FuncType) int {
		if ft.Results == nil {
			return 0
		}
		return ft.Results.NumFields()
	}
	switch fn := call.Fun.(type) {
	case *ast.Ident:
		if pc.decls != nil {
			for _, d := range pc.decls.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == fn.Name {
					return fields(fd.Type)
				}
			}
		}
		for _, d := range e.Declarations() {
			if d.Kind == KindFunc && d.Name == fn.Name {
				f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+d.Source, 0)
				if err != nil {
					return -1
				}
				for _, dd := range f.Decls {
					if fd, ok := dd.(*ast.FuncDecl); ok {
						return fields(fd.Type)
					}
				}
			}
		}
	case *ast.SelectorExpr:
		id, ok := fn.X.(*ast.Ident)
		if !ok {
			// a.b.M(): probe the receiver chain when it is rooted at a
			// global variable (no calls, so evaluating it is harmless).
			if chain, root := selectorChain(fn.X); chain != "" && root != "" {
				if n := e.methodResultCount(pc, chain, fn.Sel.Name, root); n >= 0 {
					return n
				}
			}
			return e.methodNameResultCount(fn.Sel.Name)
		}
		if id.Name == "_gxrt" {
			if v, ok := e.runtimeSymbols()[rtPath+"/gxrt"][fn.Sel.Name]; ok {
				return v.Type().NumOut()
			}
			return -1
		}
		if id.Obj != nil { // a variable this cell declares
			if n := e.methodResultCount(pc, id.Name, fn.Sel.Name, id.Name); n >= 0 {
				return n
			}
			return e.methodNameResultCount(fn.Sel.Name)
		}
		e.mu.RLock()
		defer e.mu.RUnlock()
		p, ok := e.imports[id.Name]
		if !ok {
			e.mu.RUnlock()
			n := e.methodResultCount(pc, id.Name, fn.Sel.Name, id.Name)
			e.mu.RLock()
			return n
		}
		v, ok := e.symtab[p][fn.Sel.Name]
		if ok && v.IsValid() && v.Kind() == reflect.Func {
			return v.Type().NumOut()
		}
	case *ast.FuncLit:
		return fields(fn.Type)
	}
	return -1
}

// methodResultCount tells how many results recv.method(...) returns, for a
// variable recv: the interpreter reports it for compiled types (through
// reflect), and the declaration log for methods cells declared (when every
// method of that name agrees). -1 when it cannot tell.
func (e *Engine) methodResultCount(pc *parsedCell, recv, method, root string) int {
	if n := e.localMethodResultCount(pc, recv, method); n >= 0 {
		return n
	}
	cs := e.currentCell()
	e.mu.RLock()
	it := e.it
	e.mu.RUnlock()
	// Probe only names that are global variables: a probe that fails to
	// compile can leave yaegi v0.16.1's global frame inconsistent.
	isGlobal := false
	if it != nil {
		_, isGlobal = it.Globals()[root]
	}
	if cs != nil && it != nil && isGlobal {
		text := fmt.Sprintf(bodyPrefixFmt, "outs_query/_.go") + "_gxrt.Outs(" + recv + ", " + strconv.Quote(method) + ")\n}\n"
		if f, err := parser.ParseFile(it.FileSet(), "_.go", text, 0); err == nil {
			if prog, err := compileAST(it, f.Decls[0].(*ast.FuncDecl).Body); err == nil {
				cs.mu.Lock()
				cs.kind = ""
				cs.mu.Unlock()
				ctx := cs.ctx
				if ctx == nil {
					ctx = context.Background()
				}
				if err := e.runProgram(ctx, it, prog); err == nil {
					cs.mu.Lock()
					k := cs.kind
					cs.mu.Unlock()
					if n, err := strconv.Atoi(k); err == nil {
						return n
					}
				}
			}
		}
	}
	n := -1
	consider := func(fd *ast.FuncDecl) bool {
		if fd.Recv == nil || fd.Name.Name != method {
			return true
		}
		c := 0
		if fd.Type.Results != nil {
			c = fd.Type.Results.NumFields()
		}
		if n != -1 && n != c {
			n = -2
			return false
		}
		n = c
		return true
	}
	if pc.decls != nil {
		for _, d := range pc.decls.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && !consider(fd) {
				return -1
			}
		}
	}
	for _, d := range e.Declarations() {
		if d.Kind != KindMethod || !strings.HasSuffix(d.Name, "."+method) {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+d.Source, 0)
		if err != nil {
			return -1
		}
		for _, dd := range f.Decls {
			if fd, ok := dd.(*ast.FuncDecl); ok && !consider(fd) {
				return -1
			}
		}
	}
	if n < 0 {
		return -1
	}
	return n
}

// localMethodResultCount handles a receiver this very cell declares from a
// compiled package's function (`h := display.HTML(...)`): the function's
// result type, known through reflect, tells the method's results.
func (e *Engine) localMethodResultCount(pc *parsedCell, recv, method string) int {
	var typ reflect.Type
	visit := func(n ast.Node) bool {
		if typ != nil {
			return false
		}
		var lhs, rhs []ast.Expr
		switch v := n.(type) {
		case *ast.AssignStmt:
			lhs, rhs = v.Lhs, v.Rhs
		case *ast.ValueSpec:
			for _, id := range v.Names {
				lhs = append(lhs, id)
			}
			rhs = v.Values
		default:
			return true
		}
		as := struct{ Lhs, Rhs []ast.Expr }{lhs, rhs}
		for i, l := range as.Lhs {
			id, ok := l.(*ast.Ident)
			if !ok || id.Name != recv {
				continue
			}
			var call *ast.CallExpr
			if len(as.Rhs) == len(as.Lhs) {
				call, _ = as.Rhs[i].(*ast.CallExpr)
			} else if len(as.Rhs) == 1 {
				call, _ = as.Rhs[0].(*ast.CallExpr)
			}
			if call == nil {
				continue
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				continue
			}
			pkg, ok := sel.X.(*ast.Ident)
			if !ok {
				continue
			}
			e.mu.RLock()
			path, ok := e.imports[pkg.Name]
			var fv reflect.Value
			if ok {
				fv = e.symtab[path][sel.Sel.Name]
			}
			e.mu.RUnlock()
			if fv.IsValid() && fv.Kind() == reflect.Func {
				ft := fv.Type()
				idx := i
				if len(as.Rhs) == len(as.Lhs) {
					idx = 0
				}
				if idx < ft.NumOut() {
					typ = ft.Out(idx)
				}
			}
		}
		return typ == nil
	}
	if pc.body != nil {
		ast.Inspect(pc.body, visit)
	}
	if pc.decls != nil {
		ast.Inspect(pc.decls, visit)
	}
	if typ == nil {
		return -1
	}
	m, ok := typ.MethodByName(method)
	if !ok {
		return -1
	}
	return m.Type.NumOut()
}

// selectorChain renders a.b.c (identifiers and field selectors only) and
// returns it with its root identifier; "" when x is anything else.
func selectorChain(x ast.Expr) (chain, root string) {
	switch x := x.(type) {
	case *ast.Ident:
		return x.Name, x.Name
	case *ast.SelectorExpr:
		c, r := selectorChain(x.X)
		if c == "" {
			return "", ""
		}
		return c + "." + x.Sel.Name, r
	}
	return "", ""
}

// methodNameResultCount is the last resort for x.M() when x's type is
// unknown: if every method called M of the imported compiled packages' types
// and of the cells' types returns the same number of results, that is the
// answer. (yaegi v0.16.1 compiles `v := x.M()` for a void M and fails when
// it runs, so guessing "one result" is not safe.)
func (e *Engine) methodNameResultCount(method string) int {
	n := -1
	agree := func(c int) bool {
		if n == -1 {
			n = c
			return true
		}
		return n == c
	}
	e.mu.RLock()
	paths := make([]string, 0, len(e.imports))
	for _, p := range e.imports {
		paths = append(paths, p)
	}
	for _, p := range paths {
		for _, v := range e.symtab[p] {
			if !v.IsValid() || v.Kind() != reflect.Pointer || !v.IsNil() {
				continue
			}
			t := v.Type() // *T for an exported type T
			if m, ok := t.MethodByName(method); ok {
				if !agree(m.Type.NumOut()) {
					e.mu.RUnlock()
					return -1
				}
			}
			if t.Elem().Kind() == reflect.Interface {
				if m, ok := t.Elem().MethodByName(method); ok && !agree(m.Type.NumOut()) {
					e.mu.RUnlock()
					return -1
				}
			}
		}
	}
	e.mu.RUnlock()
	for _, d := range e.Declarations() {
		if d.Kind != KindMethod || !strings.HasSuffix(d.Name, "."+method) {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+d.Source, 0)
		if err != nil {
			return -1
		}
		for _, dd := range f.Decls {
			if fd, ok := dd.(*ast.FuncDecl); ok {
				c := 0
				if fd.Type.Results != nil {
					c = fd.Type.Results.NumFields()
				}
				if !agree(c) {
					return -1
				}
			}
		}
	}
	return n
}

// quietCall reports a trailing call whose value nobody wants to see as the
// cell's result: fmt.Println's byte count and error, the handle that
// display.HTML returns (the display already shows the content).
func (e *Engine) quietCall(pc *parsedCell, x ast.Expr) bool {
	call, ok := x.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	if !ok || pkg.Obj != nil {
		return false
	}
	switch e.importPath(pkg.Name, pc) {
	case "fmt":
		return strings.HasPrefix(sel.Sel.Name, "Print") || strings.HasPrefix(sel.Sel.Name, "Fprint")
	case "github.com/goaccel/goaccel/display":
		return true
	}
	return false
}

// probeFilter tells which show probes cannot apply to the current _gxv, so
// a plain value costs one compile instead of one per probe. A probe calling
// method M is needed only if the value's compiled type has M or some cell
// declared a method M (interpreted types keep their methods out of reflect).
func (e *Engine) probeFilter(it *interp.Interpreter) func(probe string) bool {
	v, ok := it.Globals()["_gxv"]
	if !ok || !v.IsValid() {
		return func(string) bool { return false }
	}
	t := v.Type()
	declared := map[string]bool{}
	for _, d := range e.Declarations() {
		if d.Kind == KindMethod {
			declared[d.Name[strings.LastIndex(d.Name, ".")+1:]] = true
		}
	}
	has := func(m string) bool {
		if declared[m] {
			return true
		}
		if _, ok := t.MethodByName(m); ok {
			return true
		}
		if t.Kind() == reflect.Interface {
			return true // the dynamic value may have it
		}
		_, ok := reflect.PointerTo(t).MethodByName(m)
		return ok
	}
	imageType := reflect.TypeOf((*image.Image)(nil)).Elem()
	return func(probe string) bool {
		switch {
		case strings.Contains(probe, `_gxv+""`):
			return t.Kind() != reflect.String && t.Kind() != reflect.Interface
		case strings.HasPrefix(probe, "_gxrt.Image("):
			return !(t.Implements(imageType) || t.Kind() == reflect.Interface || declared["ColorModel"])
		}
		if i := strings.Index(probe, "_gxv."); i >= 0 {
			name := probe[i+len("_gxv."):]
			name = name[:strings.Index(name, "(")]
			return !has(name)
		}
		return false
	}
}

// importablePackages maps a package name to the import path auto-import
// uses for it. It depends only on the symbol tables, so it is computed once.
func (e *Engine) importablePackages() map[string]string {
	e.autoOnce.Do(func() {
		e.mu.RLock()
		defer e.mu.RUnlock()
		byName := map[string]string{}
		for p, n := range e.pkgName {
			if strings.HasPrefix(p, rtPath) || strings.Contains(p, "internal") {
				continue
			}
			if old, ok := byName[n]; ok {
				if pref, ok := preferredImport[n]; ok {
					byName[n] = pref
					continue
				}
				if len(old) < len(p) || (len(old) == len(p) && old < p) {
					continue
				}
			}
			byName[n] = p
		}
		e.autoByName = byName
	})
	return e.autoByName
}

// namesKnown reports whether every identifier x uses (outside selectors'
// field names) is predeclared, declared by this cell, or a global, import or
// declaration of an earlier cell: then `_gxv := x` cannot hide an
// undefined name, which yaegi would accept silently.
func (e *Engine) namesKnown(it *interp.Interpreter, x ast.Expr, cellNames map[string]bool) bool {
	sels := map[*ast.Ident]bool{}
	ast.Inspect(x, func(n ast.Node) bool {
		if se, ok := n.(*ast.SelectorExpr); ok {
			sels[se.Sel] = true
		}
		return true
	})
	var globals map[string]reflect.Value
	known := true
	ast.Inspect(x, func(n ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if !ok || sels[id] || !known {
			return known
		}
		switch {
		case id.Name == "_", isUniverse(id.Name), cellNames[id.Name], e.hasName(id.Name):
			return true
		}
		e.mu.RLock()
		_, imp := e.imports[id.Name]
		e.mu.RUnlock()
		if imp {
			return true
		}
		if globals == nil {
			globals = it.Globals()
		}
		if _, ok := globals[id.Name]; ok {
			return true
		}
		known = false
		return false
	})
	return known
}

// textWithoutProbe formats _gxv in compiled code, saving a compile, when that
// gives what fmt inside the interpreter would: no cell declared a method fmt
// looks for (interpreted methods are invisible to compiled fmt).
func (e *Engine) textWithoutProbe(it *interp.Interpreter) (string, bool) {
	for _, d := range e.Declarations() {
		if d.Kind != KindMethod {
			continue
		}
		switch d.Name[strings.LastIndex(d.Name, ".")+1:] {
		case "String", "Error", "Format", "GoString":
			return "", false
		}
	}
	v, ok := it.Globals()["_gxv"]
	if !ok || !v.IsValid() {
		return "", false
	}
	if v.Kind() == reflect.Interface && v.IsNil() {
		return "<nil>", true
	}
	if v.Kind() == reflect.String {
		if _, has := v.Type().MethodByName("String"); !has {
			return strconv.Quote(v.String()), true
		}
	}
	return fmt.Sprint(v.Interface()), true
}
