package export

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"sort"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/notebook/cells"
	"github.com/goaccel/goaccel/notebook/check"
	"github.com/goaccel/goaccel/notebook/gen"
	"github.com/goaccel/goaccel/notebook/gonb"
)

// Options configure an export.
type Options struct {
	// Importer loads the packages cells import (the kernel's, so that the
	// program is checked against what the notebook ran with).
	Importer types.Importer
	// FileSet is the Importer's file set; nil means a new one.
	FileSet *token.FileSet
	// GoVersion is the language version ("go1.26"); empty means the newest.
	GoVersion string
	// AutoImport resolves a package name used without an import, as the
	// kernel does; nil adds none.
	AutoImport func(name string) string
	// Resolve, when set, is used instead of AutoImport (see check.Config).
	Resolve func(name, src string) (string, error)
	// Module applies a module command of a cell (the words after %: "go get
	// M@V", "use DIR") to the module the program will be built in, before
	// later cells are checked. It reports false for a command that is not
	// one; nil treats every command as not one.
	Module func(ctx context.Context, command string) (bool, error)
}

// Result is an exported program.
type Result struct {
	// Main is main.go, gofmt'ed.
	Main []byte
	// Notes name what the program does not carry (cell, line, why).
	Notes []string
}

// CellError is a cell the export cannot take: Go rejects it where the
// notebook ran it, or it has no program form.
type CellError struct {
	Cell int // 1-based position among the notebook's code cells
	Err  error
}

func (e *CellError) Error() string { return fmt.Sprintf("cell [%d]: %v", e.Cell, e.Err) }
func (e *CellError) Unwrap() error { return e.Err }

// Cell is a code cell of a notebook.
type Cell struct {
	Source string
	// LeaveOut, when set, says why the program leaves the cell out (a cell
	// tagged raises-exception shows an error on purpose).
	LeaveOut string
}

// Export makes a program of the code cells (in order; empty cells are
// skipped, as Run All does not count them).
func Export(ctx context.Context, cells []Cell, opts Options) (*Result, error) {
	if opts.Importer == nil {
		return nil, errors.New("export: no importer")
	}
	fset := opts.FileSet
	if fset == nil {
		fset = token.NewFileSet()
	}
	x := newExporter(check.NewSession(check.Config{
		Importer: opts.Importer, FileSet: fset, GoVersion: opts.GoVersion, AutoImport: opts.AutoImport, Resolve: opts.Resolve,
	}))
	n := 0
	for _, cell := range cells {
		if strings.TrimSpace(cell.Source) == "" {
			continue
		}
		n++
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if cell.LeaveOut != "" {
			x.note(n, 1, "left out: %s", cell.LeaveOut)
			x.cells = append(x.cells, &cellOut{n: n, comments: []string{fmt.Sprintf("// cell [%d] left out: %s", n, cell.LeaveOut)}})
			continue
		}
		if err := x.cell(ctx, n, cell.Source, opts); err != nil {
			return nil, &CellError{Cell: n, Err: err}
		}
	}
	return x.render()
}

// cell checks cell n and records its pieces.
func (x *exporter) cell(ctx context.Context, n int, src string, opts Options) error {
	gc, err := gonb.Parse(src)
	if err != nil {
		return err
	}
	out := &cellOut{n: n}
	x.cells = append(x.cells, out)
	if gc.Magic != nil {
		x.note(n, 1, "%%%%%s has no program equivalent: the cell is left out", gc.Magic.Name)
		out.comments = append(out.comments, "// cell ["+strconv.Itoa(n)+"] was %%"+gc.Magic.Name+": left out")
		return nil
	}
	for _, cmd := range gc.Commands {
		if err := x.command(ctx, out, cmd, opts); err != nil {
			return fmt.Errorf("line %d: %s: %w", cmd.Line, cmd.Text, err)
		}
	}
	code := gc.Code
	if len(gc.Inits) > 0 {
		code += "\n" + strings.Join(gc.Inits, "(); ") + "()"
	}
	if strings.TrimSpace(code) == "" {
		return nil
	}
	c, err := x.s.Check(code, n)
	if err != nil {
		return err
	}
	bindings := x.s.Commit(c, nil)
	x.bind(c, bindings)
	x.collect(out, c, code)
	if c.Main {
		out.main = gc.Main
		if gc.Main == nil {
			out.main = &gonb.Main{}
		}
	}
	return nil
}

// command turns a % or ! line into program code, or a comment and a note.
func (x *exporter) command(ctx context.Context, out *cellOut, cmd gonb.Command, opts Options) error {
	text := strings.TrimSpace(cmd.Text)
	if strings.HasPrefix(text, "%env ") {
		arg := strings.TrimSpace(strings.TrimPrefix(text, "%env "))
		k, v, ok := strings.Cut(arg, "=")
		if !ok {
			k, v, ok = strings.Cut(arg, " ")
		}
		if ok && k != "" {
			k, v := strings.TrimSpace(k), strings.TrimSpace(v)
			out.commands = append(out.commands, func() string {
				// The kernel confirms it on stdout; so does the program.
				return fmt.Sprintf("%s.Setenv(%q, %q) // %s\n%s.Println(%q)", x.importName("os"), k, v, text, x.importName("fmt"), fmt.Sprintf("Set: %s=%q", k, v))
			})
			return nil
		}
	}
	if strings.HasPrefix(text, "!*") {
		// GoNB's !* runs in the kernel's module directory (go work, go get
		// for the session): the program's module is go.mod's business.
		x.note(out.n, cmd.Line, "%s runs in the kernel's module directory: not carried", firstLine(text))
		out.commands = append(out.commands, func() string { return "// not carried: " + strings.ReplaceAll(text, "\n", "\n// ") })
		return nil
	}
	if sh, ok := strings.CutPrefix(text, "!"); ok {
		// A shell line: run as the kernel runs it (shellHelper).
		x.needShell = true
		out.commands = append(out.commands, func() string {
			return fmt.Sprintf("%s(%s)", x.shellName, strconv.Quote(strings.TrimSpace(sh)))
		})
		return nil
	}
	if opts.Module != nil && strings.HasPrefix(text, "%") {
		done, err := opts.Module(ctx, strings.TrimPrefix(text, "%"))
		if err != nil {
			return err
		}
		if done {
			x.note(out.n, cmd.Line, "%s is in go.mod (the program does not print what it printed)", firstLine(text))
			out.commands = append(out.commands, func() string { return "// " + text + " (in go.mod)" })
			return nil
		}
	}
	x.note(out.n, cmd.Line, "%s has no program equivalent", firstLine(text))
	out.commands = append(out.commands, func() string {
		return "// not carried: " + strings.ReplaceAll(text, "\n", "\n// ")
	})
	return nil
}

// note records something the program does not carry.
func (x *exporter) note(n, line int, format string, a ...any) {
	x.notes = append(x.notes, fmt.Sprintf("cell [%d] line %d: %s", n, line, fmt.Sprintf(format, a...)))
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}

// collect records the pieces of checked cell c, whose Go code is code.
func (x *exporter) collect(out *cellOut, c *check.Cell, code string) {
	lead := leadingComments(code)
	for _, im := range c.Imports {
		if im.Name == "_" || im.Name == "." {
			x.special[im.Name+" "+im.Path] = true
		}
	}
	decls := append([]ast.Decl(nil), c.Decls...)
	rehomed := map[ast.Decl]bool{}
	for _, r := range c.Rehomed {
		decls = append(decls, r.Decl)
		rehomed[r.Decl] = true
	}
	for _, d := range decls {
		comment := ""
		if !rehomed[d] {
			comment = lead(c, d.Pos())
		} else {
			comment = fmt.Sprintf("// %s, compiled again in cell [%d] against what it changed\n", declName(d), c.N)
		}
		switch d := d.(type) {
		case *ast.GenDecl:
			if d.Tok == token.VAR {
				x.varDecl(out, c, d, comment)
				continue
			}
			if d.Tok == token.IMPORT {
				continue
			}
			out.decls = append(out.decls, x.text(c, d, comment))
		case *ast.FuncDecl:
			x.funcDecl(out, c, d, comment)
		}
	}
	x.launches(c)
	for _, ini := range c.Info.InitOrder {
		ini := ini
		if len(ini.Lhs) > 0 && x.kept[ini.Lhs[0]] {
			continue
		}
		r := x.node(c, ini.Rhs)
		out.inits = append(out.inits, func() string {
			var lhs []string
			for _, v := range ini.Lhs {
				lhs = append(lhs, x.varName(c, v))
			}
			return strings.Join(lhs, ", ") + " = " + r()
		})
	}
	for _, h := range c.Hoisted {
		x.declareVar(out, c, h.Obj, nil, "")
	}
	if c.Body == nil {
		return
	}
	for i, st := range c.Body.Body.List {
		span := c.StmtSpans[i]
		comment := lead(c, span.Pos)
		if _, ok := st.(*ast.EmptyStmt); ok && st.Pos() != span.Pos {
			// A const declaration among the statements: package level.
			out.decls = append(out.decls, x.spanText(c, span, comment))
			continue
		}
		r := x.statement(c, i, st)
		if es, ok := st.(*ast.ExprStmt); ok && c.Trailing == es && gen.TrailingResult(c, es.X) != gen.NoResult {
			inner := r
			r = func() string {
				return x.importName(displayPath) + ".PrintResult(" + inner() + ")"
			}
		}
		out.stmts = append(out.stmts, withComment(comment, r))
	}
}

const displayPath = "github.com/goaccel/goaccel/display"

// launches notes the calls of cell c that launch a notebook function on
// workers: the kernel carries the function to them, a program cannot.
func (x *exporter) launches(c *check.Cell) {
	ids := make([]*ast.Ident, 0, len(c.Info.Uses))
	for id := range c.Info.Uses {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].Pos() < ids[j].Pos() })
	for _, id := range ids {
		obj := c.Info.Uses[id]
		fn, ok := obj.(*types.Func)
		if !ok || fn.Pkg() == nil {
			continue
		}
		switch fn.Pkg().Path() + "." + fn.Name() {
		case "github.com/goaccel/goaccel/launcher.NotebookLauncher", "github.com/goaccel/goaccel/launcher.NotebookLauncherContext",
			"github.com/goaccel/goaccel/debuglauncher.DebugLauncher", "github.com/goaccel/goaccel/debuglauncher.DebugLauncherContext":
			x.note(c.N, c.Fset.Position(id.Pos()).Line, "%s.%s carries a notebook's function to its workers through the kernel: in the program it fails; run the function under `goaccel launch` instead", fn.Pkg().Name(), fn.Name())
		}
	}
}

func withComment(comment string, r func() string) func() string {
	if comment == "" {
		return r
	}
	return func() string { return comment + r() }
}

// declName names a declaration for a comment.
func declName(d ast.Decl) string {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv != nil && len(d.Recv.List) == 1 {
			return "method " + d.Name.Name
		}
		return "func " + d.Name.Name
	case *ast.GenDecl:
		for _, sp := range d.Specs {
			switch sp := sp.(type) {
			case *ast.TypeSpec:
				return "type " + sp.Name.Name
			case *ast.ValueSpec:
				return d.Tok.String() + " " + sp.Names[0].Name
			}
		}
	}
	return "a declaration"
}

// leadingComments returns a function giving the comments that precede the
// top-level piece starting at pos in code (a doc comment, a note between
// statements), with a trailing newline, or "".
func leadingComments(code string) func(c *check.Cell, pos token.Pos) string {
	units := cells.Split(code)
	lineStarts := []int{0}
	for i, r := range code {
		if r == '\n' {
			lineStarts = append(lineStarts, i+1)
		}
	}
	return func(c *check.Cell, pos token.Pos) string {
		// The checker's files have the cell's lines and columns, not its
		// offsets.
		p := c.Fset.Position(pos)
		if p.Line < 1 || p.Line > len(lineStarts) {
			return ""
		}
		off := lineStarts[p.Line-1] + p.Column - 1
		for _, u := range units {
			if off < u.Start || off >= u.End || off > len(code) {
				continue
			}
			gap := strings.TrimSpace(code[u.Start:off])
			if !strings.HasPrefix(gap, "//") && !strings.HasPrefix(gap, "/*") {
				return ""
			}
			return gap + "\n"
		}
		return ""
	}
}
