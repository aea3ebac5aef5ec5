package yaegirunner

// A cell cut into its imports, declarations and statements, each parsed
// behind a //line directive so that yaegi reports the cell's own positions;
// and running what yaegi compiled from them.

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
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
func (r *Runner) parseCell(fset *token.FileSet, src string, n int) (*parsedCell, *frontend.Error) {
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
func (r *Runner) runProgram(ctx context.Context, it *interp.Interpreter, prog *interp.Program) (err error) {
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
func (r *Runner) askInterpreter(it *interp.Interpreter, cs *cellState, fname, code string) (answer string, ok bool) {
	prog, err := compileProbe(it, fname, code)
	if err != nil {
		return "", false
	}
	cs.mu.Lock()
	cs.probeAnswer = ""
	cs.mu.Unlock()
	ctx := cs.cell.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	if err := r.runProgram(ctx, it, prog); err != nil {
		return "", false
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.probeAnswer, true
}
