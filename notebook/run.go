package notebook

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"path"
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

// parseProbe parses code, statements for a function body, as a file of its
// own named fname (in positions and errors). Probes are the small programs
// that ask the interpreter something (a value's kind, how many results a
// method returns, a type's reflect.Type) or format _gxv.
func parseProbe(it *interp.Interpreter, fname, code string) (*ast.BlockStmt, error) {
	text := fmt.Sprintf(bodyPrefixFmt, fname) + code + "\n}\n"
	f, err := parser.ParseFile(it.FileSet(), "_.go", text, 0)
	if err != nil {
		return nil, err
	}
	return f.Decls[0].(*ast.FuncDecl).Body, nil
}

// compileProbe parses and compiles a probe (see parseProbe).
func compileProbe(it *interp.Interpreter, fname, code string) (*interp.Program, error) {
	body, err := parseProbe(it, fname, code)
	if err != nil {
		return nil, err
	}
	return compileAST(it, body)
}

// askInterpreter runs a probe whose runtime hook (_gxrt.Kind, _gxrt.Outs)
// answers in cs.probeAnswer, and returns the answer; ok is false when the
// probe did not compile or failed.
func (e *Engine) askInterpreter(it *interp.Interpreter, cs *cellState, fname, code string) (answer string, ok bool) {
	prog, err := compileProbe(it, fname, code)
	if err != nil {
		return "", false
	}
	cs.mu.Lock()
	cs.probeAnswer = ""
	cs.mu.Unlock()
	ctx := cs.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	if err := e.runProgram(ctx, it, prog); err != nil {
		return "", false
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.probeAnswer, true
}

// runCell runs the Go code of a cell and returns the trailing expression's
// MIME bundle (nil when there is none).
func (e *Engine) runCell(ctx context.Context, cs *cellState, src string) (frontend.MIMEBundle, *frontend.Error) {
	if e.comp != nil && !e.debugMode(ctx, cs) {
		return e.runCompiled(ctx, cs, src)
	}
	e.noteInterpreted()
	it := e.interp()
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
					ferr.Value = fmt.Sprintf("package %q is not available: cells are interpreted here because compiled cells are unavailable (%v), and interpreted cells can import only the standard library, gonum (mat, floats, stat) and goaccel's packages; modules are fetched for compiled cells", path, e.compReason())
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

	// The trailing expression, whose value is the cell's result (see
	// compileBody).
	var trailing ast.Expr
	if n := len(body.List); n > 0 && !rw.definesMain {
		if es, ok := body.List[n-1].(*ast.ExprStmt); ok {
			trailing = es.X
		}
	}
	if rw.definesMain {
		body.List = append(body.List, &ast.ExprStmt{X: &ast.CallExpr{Fun: ast.NewIdent(mainName)}})
	}
	prog, mode, err := e.compileBody(it, pc, rw, body, trailing)
	if err != nil {
		return nil, e.toError(err, pc.src, "CompileError")
	}
	e.dbg.AddProgram(prog, cs.count)
	cs.takeResult()
	if err := e.runBody(ctx, it, cs, prog); err != nil {
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
				recv := cells.ReceiverType(d)
				if recv == "" {
					recv = "?"
				}
				name = recv + "." + name
			}
			p := pc.declFile.Position(from)
			pending = append(pending, Declaration{Kind: kind, Name: name, Source: text, Cell: cs.count, results: funcResults(d.Type),
				SrcCell: cs.count, Line: p.Line, Col: p.Column})
		case *ast.GenDecl:
			pending = append(pending, genDecls(pc, pc.declFile, d, cs.count)...)
		}
	}
	if err := rw.rewriteFile(f); err != nil {
		return err
	}
	prog, err := compileAST(it, f)
	if err == nil {
		e.dbg.AddProgram(prog, cs.count)
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
		var at token.Position
		if d.Lparen == token.NoPos {
			from := d.Pos()
			if d.Doc != nil {
				from = d.Doc.Pos()
			}
			body = pc.text(file, from, d.End())
			if file != nil && from.IsValid() {
				at = file.Position(from)
			}
		} else {
			// "type " + the spec: the spec's own line, shifted by the keyword
			body = d.Tok.String() + " " + pc.text(file, s.Pos(), s.End())
			if file != nil && s.Pos().IsValid() {
				at = file.Position(s.Pos())
				at.Column = max(at.Column-len(d.Tok.String())-1, 1)
			}
		}
		switch s := s.(type) {
		case *ast.TypeSpec:
			out = append(out, Declaration{Kind: KindType, Name: s.Name.Name, Source: body, Cell: count, SrcCell: count, Line: at.Line, Col: at.Column})
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
			out = append(out, Declaration{Kind: kind, Name: names[0], Names: names, Source: body, Cell: count, SrcCell: count, Line: at.Line, Col: at.Column})
		}
	}
	return out
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
		ast.Inspect(pc.body, visit)
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
