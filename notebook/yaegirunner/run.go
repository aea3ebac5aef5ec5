package yaegirunner

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/printer"
	"go/token"
	"strconv"
	"strings"

	"github.com/traefik/yaegi/interp"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook/cells"
	"github.com/goaccel/goaccel/notebook/internal/session"
)

// Run runs the Go code of cell c and returns the trailing expression's
// value, formatted (nil when there is none).
func (r *Runner) Run(ctx context.Context, c *session.Cell, src string) (*session.Result, *frontend.Error) {
	cs := r.state()
	b, err := r.runCell(ctx, cs, src)
	if err != nil || b == nil {
		return nil, err
	}
	return &session.Result{Bundle: b}, nil
}

// runCell runs the Go code of a cell and returns the trailing expression's
// MIME bundle (nil when there is none).
func (r *Runner) runCell(ctx context.Context, cs *cellState, src string) (frontend.MIMEBundle, *frontend.Error) {
	it := r.interp()
	fset := it.FileSet()
	pc, ferr := r.parseCell(fset, src, cs.cell.Count)
	if ferr != nil {
		return nil, ferr
	}
	rw := newRewriter(r, it, pc)

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
	specs, ferr := r.newImports(pc)
	if ferr != nil {
		return nil, ferr
	}
	auto := r.autoImports(pc, specs, cellNames)
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
				err = r.runProgram(ctx, it, prog)
			}
			if err != nil {
				ferr := r.toError(err, pc.src, "ImportError")
				if strings.Contains(ferr.Value, "unable to find source related to") {
					path, _ := strconv.Unquote(spec.Path.Value)
					ferr.Value = fmt.Sprintf("package %q is not available: cells are interpreted here because compiled cells are unavailable (%v), and interpreted cells can import only the standard library, gonum (mat, floats, stat) and goaccel's packages; modules are fetched for compiled cells", path, r.opts.CompiledUnavailable)
				}
				return nil, ferr
			}
			p, _ := strconv.Unquote(spec.Path.Value)
			name := r.importName(spec)
			srcText := pc.text(pc.importFile, spec.Pos(), spec.End())
			if srcText == "" {
				srcText = importSource(spec)
			} else {
				srcText = "import " + srcText
			}
			r.log.AddImport(session.Declaration{Kind: session.KindImport, Name: name, Source: srcText, Path: p, Cell: cs.cell.Count})
		}
		for _, s := range auto {
			r.out.Write("stderr", []byte(fmt.Sprintf("goaccel: added import %s\n", s.Path.Value)))
		}
	}

	// yaegi v0.16.1 mishandles package-level var initializers that use
	// variables of earlier cells ("variable definition loop"), and interface
	// vars initialized there. So var and const declarations run as
	// statements (which yaegi also makes globals), first in the block, unless
	// this cell's functions or types refer to them.
	moved := r.moveVars(pc)

	// 2. Declarations, as one file.
	if pc.decls != nil && len(pc.decls.Decls) > 0 {
		if ferr := r.runDecls(ctx, it, pc, rw, cs); ferr != nil {
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
	var bodyPending []session.Declaration
	for _, st := range body.List {
		names := stmtNames(st)
		if len(names) == 0 {
			continue
		}
		if moved[st] {
			bodyPending = append(bodyPending, genDecls(pc, pc.declFile, st.(*ast.DeclStmt).Decl.(*ast.GenDecl), cs.cell.Count)...)
			continue
		}
		text := pc.text(pc.file, st.Pos(), st.End())
		if text == "" {
			continue
		}
		kind := session.KindVar
		if ds, ok := st.(*ast.DeclStmt); ok {
			if g, ok := ds.Decl.(*ast.GenDecl); ok && g.Tok == token.CONST {
				kind = session.KindConst
			}
		}
		for _, n := range names {
			bodyPending = append(bodyPending, session.Declaration{Kind: kind, Name: n, Names: []string{n}, Source: text, FromStatement: true, Cell: cs.cell.Count})
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
	prog, mode, err := r.compileBody(it, pc, rw, body, trailing)
	if err != nil {
		return nil, r.toError(err, pc.src, "CompileError")
	}
	r.addProgram(prog, cs.cell.Count)
	cs.takeResult()
	if err := r.runBody(ctx, it, cs, prog); err != nil {
		if session.IsCanceled(err) {
			return nil, session.ErrInterrupted()
		}
		return nil, r.toError(err, pc.src, "")
	}
	r.log.Add(bodyPending...)
	if perr := goPanicError(cs); perr != nil {
		return nil, perr
	}
	if ctx.Err() != nil {
		return nil, session.ErrInterrupted()
	}
	switch mode {
	case showSingle:
		r.showValue(ctx, it, cs)
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
func (r *Runner) runDecls(ctx context.Context, it *interp.Interpreter, pc *parsedCell, rw *rewriter, cs *cellState) *frontend.Error {
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
			r.mu.RLock()
			old, exists := r.types[ts.Name.Name]
			r.mu.RUnlock()
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
	var pending []session.Declaration
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			from := d.Pos()
			if d.Doc != nil {
				from = d.Doc.Pos()
			}
			text := pc.text(pc.declFile, from, d.End())
			name := d.Name.Name
			kind := session.KindFunc
			if d.Recv != nil && len(d.Recv.List) > 0 {
				kind = session.KindMethod
				recv := cells.ReceiverType(d)
				if recv == "" {
					recv = "?"
				}
				name = recv + "." + name
			}
			p := pc.declFile.Position(from)
			pending = append(pending, session.Declaration{Kind: kind, Name: name, Source: text, Cell: cs.cell.Count, Results: funcResults(d.Type),
				SrcCell: cs.cell.Count, Line: p.Line, Col: p.Column})
		case *ast.GenDecl:
			pending = append(pending, genDecls(pc, pc.declFile, d, cs.cell.Count)...)
		}
	}
	if err := rw.rewriteFile(f); err != nil {
		return err
	}
	prog, err := compileAST(it, f)
	if err == nil {
		r.addProgram(prog, cs.cell.Count)
		err = r.runProgram(ctx, it, prog)
	}
	if err != nil {
		if session.IsCanceled(err) {
			return session.ErrInterrupted()
		}
		return r.toError(err, pc.src, "CompileError")
	}
	r.mu.Lock()
	for _, t := range newTypes {
		r.types[t.name] = t.canon
	}
	r.mu.Unlock()
	r.log.Add(pending...)
	return nil
}

// genDecls returns the log entries of a type, var or const declaration,
// one per spec.
func genDecls(pc *parsedCell, file *token.File, d *ast.GenDecl, count int) (out []session.Declaration) {
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
			out = append(out, session.Declaration{Kind: session.KindType, Name: s.Name.Name, Source: body, Cell: count, SrcCell: count, Line: at.Line, Col: at.Column})
		case *ast.ValueSpec:
			kind := session.KindVar
			if d.Tok == token.CONST {
				kind = session.KindConst
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
			out = append(out, session.Declaration{Kind: kind, Name: names[0], Names: names, Source: body, Cell: count, SrcCell: count, Line: at.Line, Col: at.Column})
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
