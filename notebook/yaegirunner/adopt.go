package yaegirunner

// Debugging a compiled session. Compiled code cannot stop at breakpoints,
// so while a client is attached (and a breakpoint is set) the engine moves
// the session to this runner, and cells run under yaegi's debugger:
//
//   - entering (Adopt), the session is carried into a fresh interpreter the way a
//     launched worker rebuilds it: the imports, then every declaration of
//     the log (types, functions, methods, constants) by source, each at its
//     cell's position (so breakpoints in functions of earlier cells work),
//     every variable declared with its type, and the variables' values
//     copied (carry.go). What the interpreter cannot take is left out and
//     named in a note;
//   - leaving (Restore: the client detached), what the interpreted cells declared is
//     compiled as one cell (declarations by source, variables by type) and
//     every variable's value is copied back; the compiled session goes on
//     from there. What does not compile or copy is named in a note.

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/traefik/yaegi/interp"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook/dap"
	"github.com/goaccel/goaccel/notebook/internal/session"
)

// debugReplayItem is one declaration carried into the interpreter.
type debugReplayItem struct {
	what string // for notes: "func F (cell[3])", "variable x"
	text string // the declaration, preceded by its //line directive
	file string // position file of the declaration
	from int    // first and last line (as positions report them)
	to   int
	typ  string // a type declaration's canonical text
	name string
}

// replayPos finds the position a compile error names.
var replayPos = regexp.MustCompile(`((?:cell\[\d+\]|debugvars)/_\.go):(\d+):\d+`)

// Compiled is the compiled session as the debugger's moves see it
// (package compiledrunner).
type Compiled interface {
	// Vars are the session's variables, each typed as a cell would
	// declare it given the named imports (local name → path); imports
	// declares the packages those types need that no cell imported.
	Vars(imports map[string]string) (vars []session.Var, extra []string)
	// Values are the session's variables with their values.
	Values() []session.Var
	// Declare runs src, declarations only, as cell n of the session.
	Declare(ctx context.Context, src string, n int) *frontend.Error
	// Value is the storage of the session variable name.
	Value(name string) (reflect.Value, bool)
}

// Adopt carries a compiled session into a fresh interpreter, which cells
// run on from then on (until Restore): the imports and every declaration
// of the log at its cell's position, every variable declared with its type
// and its value copied. It returns the note for the user; ok is false when
// the session could not be carried at all (cells then stay compiled).
func (r *Runner) Adopt(ctx context.Context, from Compiled) (note string, ok bool) {
	items, extra := r.replayItems(from)
	imports := append(r.replayImports(), extra...)
	var notes []string
	var it *interp.Interpreter
	var prog *interp.Program
	for {
		var err error
		it, err = r.newInterpreter()
		if err != nil {
			return "goaccel: the debugger cannot start the interpreter: " + err.Error() + "; cells stay compiled and do not stop at breakpoints", false
		}
		for _, im := range imports {
			if err := r.runSource(ctx, it, "package main\n"+im); err != nil {
				notes = append(notes, fmt.Sprintf("%s: %v", im, err))
			}
		}
		prog, err = r.compileReplay(it, items)
		if err == nil {
			break
		}
		i := failingItem(items, err)
		if i < 0 {
			return fmt.Sprintf("goaccel: the debugger cannot interpret this session's declarations (%v); cells stay compiled and do not stop at breakpoints", mapPositions(err.Error())), false
		}
		notes = append(notes, fmt.Sprintf("%s: %s", items[i].what, mapPositions(err.Error())))
		items = append(items[:i], items[i+1:]...)
	}
	if prog != nil {
		if err := r.runProgram(ctx, it, prog); err != nil {
			return "goaccel: the debugger cannot interpret this session's declarations: " + mapPositions(err.Error()), false
		}
	}
	// The values.
	g := it.Globals()
	copied := 0
	for _, v := range from.Values() {
		dst, ok := g[v.Name]
		if !ok || session.Hidden(v.Name) {
			continue
		}
		if err := debugCarryValue(dst, v.Value); err != nil {
			notes = append(notes, fmt.Sprintf("variable %s: %v; it starts as its zero value", v.Name, err))
			continue
		}
		copied++
	}
	r.mu.Lock()
	r.saved = r.it
	r.it = it
	r.types = map[string]string{}
	for _, item := range items {
		if item.typ != "" {
			r.types[item.name] = item.typ
		}
	}
	r.mu.Unlock()
	r.resetPrograms()
	if prog != nil {
		r.addProgram(prog, 0)
	}
	msg := "goaccel: debugging: cells now run on the interpreter (yaegi) so that breakpoints work"
	if len(items)+copied > 0 {
		msg += fmt.Sprintf("; %d declarations and %d variable values were carried over from the compiled cells", len(items), copied)
	}
	if len(notes) > 0 {
		msg += "; not carried over (not available while debugging):\n  " + strings.Join(notes, "\n  ")
	}
	return msg, true
}

// replayImports returns the session's imports as declarations.
func (r *Runner) replayImports() (out []string) {
	for _, d := range r.log.Declarations() {
		if d.Kind == session.KindImport && d.Source != "" {
			out = append(out, d.Source)
		}
	}
	return out
}

// replayItems returns the declarations to replay, variables included, and
// the imports the variables' types need that no cell made.
func (r *Runner) replayItems(from Compiled) (items []debugReplayItem, imports []string) {
	for _, d := range r.log.Declarations() {
		switch d.Kind {
		case session.KindType, session.KindConst, session.KindFunc, session.KindMethod:
		default:
			continue
		}
		if d.Source == "" || d.FromStatement && d.Kind != session.KindConst {
			continue
		}
		item := debugReplayItem{what: fmt.Sprintf("%s %s (cell[%d])", d.Kind, d.Name, d.SrcCell), name: d.Name}
		n, line := d.SrcCell, d.Line
		if n <= 0 || line <= 0 {
			n, line = d.Cell, 0
		}
		item.text = lineDirective(n, line, d.Col) + d.Source + "\n"
		item.file = cellFileName(n)
		if line > 0 {
			item.from = dap.EncodeLine(n, line)
			item.to = item.from + strings.Count(d.Source, "\n")
		}
		if d.Kind == session.KindType {
			item.typ = canonicalOf(d.Source)
		}
		items = append(items, item)
	}
	// Variables, with their compiled types.
	vars, imports := from.Vars(r.log.Imports())
	for i, v := range vars {
		line := i + 1
		items = append(items, debugReplayItem{what: "variable " + v.Name, name: v.Name, file: "debugvars/_.go", from: line, to: line,
			text: fmt.Sprintf("//line debugvars/_.go:%d:1\nvar %s %s\n", line, v.Name, v.Type)})
	}
	return items, imports
}

// canonicalOf is the canonical text of a type declaration's source.
func canonicalOf(src string) string {
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+src, 0)
	if err != nil {
		return ""
	}
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok {
			for _, s := range g.Specs {
				if ts, ok := s.(*ast.TypeSpec); ok {
					return canonical(ts)
				}
			}
		}
	}
	return ""
}

// compileReplay compiles the declarations as one file (nil when there are
// none), rewritten as cells' declarations are.
func (r *Runner) compileReplay(it *interp.Interpreter, items []debugReplayItem) (*interp.Program, error) {
	var b strings.Builder
	b.WriteString("package main\n")
	n := 0
	for _, item := range items {
		b.WriteString(item.text)
		n++
	}
	if n == 0 {
		return nil, nil
	}
	text := b.String()
	f, err := parser.ParseFile(it.FileSet(), "_.go", text, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	pc := &parsedCell{src: text, fname: "replay", decls: f, declFile: it.FileSet().File(f.Pos())}
	rw := newRewriter(r, it, pc)
	if ferr := rw.rewriteFile(f); ferr != nil {
		return nil, ferr
	}
	return compileAST(it, f)
}

// failingItem is the item a compile error's position falls in (-1: none).
func failingItem(items []debugReplayItem, err error) int {
	m := replayPos.FindStringSubmatch(err.Error())
	if m == nil {
		return -1
	}
	line, _ := strconv.Atoi(m[2])
	for i, item := range items {
		if item.file == m[1] && line >= item.from && line <= item.to {
			return i
		}
	}
	return -1
}

// runSource compiles and runs a small file in it.
func (r *Runner) runSource(ctx context.Context, it *interp.Interpreter, src string) error {
	f, err := parser.ParseFile(it.FileSet(), "_.go", src, 0)
	if err != nil {
		return err
	}
	prog, err := compileAST(it, f)
	if err != nil {
		return err
	}
	return r.runProgram(ctx, it, prog)
}

// Restore carries what the interpreted cells did since cell since back to
// the compiled session, as cell last, and gives cells the interpreter they
// had before Adopt. It returns the note for the user.
func (r *Runner) Restore(ctx context.Context, to Compiled, since, last int) string {
	it := r.interp()
	g := it.Globals()
	names, _ := r.typeNames(r.log.Declarations())
	local := map[string]string{}
	for n, p := range r.log.Imports() {
		local[p] = n
	}
	var notes, parts []string
	declared := map[string]bool{}
	for _, d := range r.log.Declarations() {
		if d.Cell < since {
			continue
		}
		switch {
		case d.Kind == session.KindImport:
			parts = append(parts, d.Source)
		case d.Kind == session.KindVar:
			for _, n := range append([]string{d.Name}, d.Names...) {
				v, ok := g[n]
				if !ok || declared[n] || session.Hidden(n) {
					continue
				}
				declared[n] = true
				texpr, err := typeExpr(v.Type(), names, local)
				if err != nil {
					notes = append(notes, fmt.Sprintf("variable %s: %v", n, err))
					continue
				}
				parts = append(parts, "var "+n+" "+texpr)
			}
		case d.Source != "":
			parts = append(parts, d.Source)
		}
	}
	if len(parts) > 0 {
		src := strings.Join(parts, "\n") + "\n"
		if ferr := to.Declare(ctx, src, last); ferr != nil {
			notes = append(notes, "the declarations of the interpreted cells: "+ferr.Value)
		}
	}
	copied := 0
	for _, n := range r.log.VarNames() {
		v, ok := g[n]
		dst, ok2 := to.Value(n)
		if !ok || !ok2 {
			continue
		}
		if err := debugCarryValue(dst, v); err != nil {
			notes = append(notes, fmt.Sprintf("variable %s: %v; compiled cells keep its earlier (or zero) value", n, err))
			continue
		}
		copied++
	}
	r.mu.Lock()
	if r.saved != nil {
		r.it = r.saved
	}
	r.saved = nil
	r.mu.Unlock()
	r.resetPrograms()
	msg := fmt.Sprintf("goaccel: the debugger is detached: cells are compiled again; %d variable values were carried back from the interpreter", copied)
	if len(notes) > 0 {
		msg += "; not carried back:\n  " + strings.Join(notes, "\n  ")
	}
	return msg
}
