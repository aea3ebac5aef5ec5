package notebook

// Debugging a compiled session. Compiled code cannot stop at breakpoints,
// so while a client is attached (and a breakpoint is set) cells run on the
// interpreter, under yaegi's debugger:
//
//   - entering, the session is carried into a fresh interpreter the way a
//     launched worker rebuilds it: the imports, then every declaration of
//     the log (types, functions, methods, constants) by source, each at its
//     cell's position (so breakpoints in functions of earlier cells work),
//     every variable declared with its type, and the variables' values
//     copied (carry.go). What the interpreter cannot take is left out and
//     named in a note;
//   - leaving (the client detached), what the interpreted cells declared is
//     compiled as one cell (declarations by source, variables by type) and
//     every variable's value is copied back; the compiled session goes on
//     from there. What does not compile or copy is named in a note.

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/traefik/yaegi/interp"

	"github.com/goaccel/goaccel/notebook/check"
	"github.com/goaccel/goaccel/notebook/dap"
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

// enterInterpreted carries the compiled session into a fresh interpreter.
func (e *Engine) enterInterpreted(ctx context.Context, cs *cellState) {
	st := &e.dbgState
	items, extra := e.replayItems()
	imports := append(e.replayImports(), extra...)
	var notes []string
	var it *interp.Interpreter
	var prog *interp.Program
	for {
		var err error
		it, _, _, err = e.newInterpreter()
		if err != nil {
			st.refused = true
			e.debugNote("goaccel: the debugger cannot start the interpreter: " + err.Error() + "; cells stay compiled and do not stop at breakpoints")
			return
		}
		for _, im := range imports {
			if err := e.runSource(ctx, it, "package main\n"+im); err != nil {
				notes = append(notes, fmt.Sprintf("%s: %v", im, err))
			}
		}
		prog, err = e.compileReplay(it, items)
		if err == nil {
			break
		}
		i := failingItem(items, err)
		if i < 0 {
			st.refused = true
			e.debugNote(fmt.Sprintf("goaccel: the debugger cannot interpret this session's declarations (%v); cells stay compiled and do not stop at breakpoints", mapPositions(err.Error())))
			return
		}
		notes = append(notes, fmt.Sprintf("%s: %s", items[i].what, mapPositions(err.Error())))
		items = append(items[:i], items[i+1:]...)
	}
	if prog != nil {
		if err := e.runProgram(ctx, it, prog); err != nil {
			st.refused = true
			e.debugNote("goaccel: the debugger cannot interpret this session's declarations: " + mapPositions(err.Error()))
			return
		}
	}
	// The values.
	g := it.Globals()
	copied := 0
	for _, v := range e.comp.Entries() {
		dst, ok := g[v.Name]
		if !ok || hiddenName(v.Name) {
			continue
		}
		if err := debugCarryValue(dst, v.Value); err != nil {
			notes = append(notes, fmt.Sprintf("variable %s: %v; it starts as its zero value", v.Name, err))
			continue
		}
		copied++
	}
	e.mu.Lock()
	st.saved = e.it
	e.it = it
	e.types = map[string]string{}
	for _, item := range items {
		if item.typ != "" {
			e.types[item.name] = item.typ
		}
	}
	e.mu.Unlock()
	e.dbg.ResetPrograms()
	if prog != nil {
		e.dbg.AddProgram(prog, 0)
	}
	st.live, st.since = true, cs.count
	msg := "goaccel: debugging: cells now run on the interpreter (yaegi) so that breakpoints work"
	if len(items)+copied > 0 {
		msg += fmt.Sprintf("; %d declarations and %d variable values were carried over from the compiled cells", len(items), copied)
	}
	if len(notes) > 0 {
		msg += "; not carried over (not available while debugging):\n  " + strings.Join(notes, "\n  ")
	}
	e.debugNote(msg)
}

// replayImports returns the session's imports as declarations.
func (e *Engine) replayImports() (out []string) {
	for _, d := range e.Declarations() {
		if d.Kind == KindImport && d.Source != "" {
			out = append(out, d.Source)
		}
	}
	return out
}

// replayItems returns the declarations to replay, variables included, and
// the imports the variables' types need that no cell made.
func (e *Engine) replayItems() (items []debugReplayItem, imports []string) {
	for _, d := range e.Declarations() {
		switch d.Kind {
		case KindType, KindConst, KindFunc, KindMethod:
		default:
			continue
		}
		if d.Source == "" || d.FromStatement && d.Kind != KindConst {
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
		if d.Kind == KindType {
			item.typ = canonicalOf(d.Source)
		}
		items = append(items, item)
	}
	// Variables, with their compiled types.
	local := map[string]string{}
	for n, p := range e.Imports() {
		local[p] = n
	}
	extra := 0
	qual := func(p *types.Package) string {
		if p.Path() == "main" {
			return ""
		}
		if n, ok := local[p.Path()]; ok {
			return n
		}
		extra++
		n := "_gxd" + strconv.Itoa(extra)
		local[p.Path()] = n
		return n
	}
	line := 0
	for _, en := range e.comp.Checker().Entries() {
		if en.Kind != check.VarEntry || hiddenName(en.Name) {
			continue
		}
		if _, ok := e.comp.Value(en.Name); !ok {
			continue
		}
		line++
		t := types.TypeString(en.Obj.Type(), qual)
		items = append(items, debugReplayItem{what: "variable " + en.Name, name: en.Name, file: "debugvars/_.go", from: line, to: line,
			text: fmt.Sprintf("//line debugvars/_.go:%d:1\nvar %s %s\n", line, en.Name, t)})
	}
	for path, n := range local {
		if strings.HasPrefix(n, "_gxd") {
			imports = append(imports, fmt.Sprintf("import %s %q", n, path))
		}
	}
	sort.Strings(imports)
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
func (e *Engine) compileReplay(it *interp.Interpreter, items []debugReplayItem) (*interp.Program, error) {
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
	rw := newRewriter(e, it, pc)
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
func (e *Engine) runSource(ctx context.Context, it *interp.Interpreter, src string) error {
	f, err := parser.ParseFile(it.FileSet(), "_.go", src, 0)
	if err != nil {
		return err
	}
	prog, err := compileAST(it, f)
	if err != nil {
		return err
	}
	return e.runProgram(ctx, it, prog)
}

// leaveInterpreted carries what the interpreted cells did back to the
// compiled session.
func (e *Engine) leaveInterpreted(ctx context.Context, cs *cellState) {
	st := &e.dbgState
	it := e.interp()
	g := it.Globals()
	names, _ := e.typeNames(e.Declarations())
	local := map[string]string{}
	for n, p := range e.Imports() {
		local[p] = n
	}
	var notes, parts []string
	declared := map[string]bool{}
	for _, d := range e.Declarations() {
		if d.Cell < st.since {
			continue
		}
		switch {
		case d.Kind == KindImport:
			parts = append(parts, d.Source)
		case d.Kind == KindVar:
			for _, n := range append([]string{d.Name}, d.Names...) {
				v, ok := g[n]
				if !ok || declared[n] || hiddenName(n) {
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
		progress := func(msg string) { e.out.write("stderr", []byte("goaccel: "+msg+"\n")) }
		src := strings.Join(parts, "\n") + "\n"
		res, err := e.comp.Run(ctx, src, st.last, progress)
		if res != nil {
			e.logBindings(res.Bindings, res.Imports, st.last)
		}
		if err != nil {
			ferr := e.compiledError(err, src, st.last)
			notes = append(notes, "the declarations of the interpreted cells: "+ferr.Value)
		}
	}
	copied := 0
	for _, n := range e.varNames() {
		v, ok := g[n]
		dst, ok2 := e.comp.Value(n)
		if !ok || !ok2 {
			continue
		}
		if err := debugCarryValue(dst, v); err != nil {
			notes = append(notes, fmt.Sprintf("variable %s: %v; compiled cells keep its earlier (or zero) value", n, err))
			continue
		}
		copied++
	}
	e.mu.Lock()
	if st.saved != nil {
		e.it = st.saved
	}
	e.mu.Unlock()
	e.dbg.ResetPrograms()
	st.live, st.saved = false, nil
	msg := fmt.Sprintf("goaccel: the debugger is detached: cells are compiled again; %d variable values were carried back from the interpreter", copied)
	if len(notes) > 0 {
		msg += "; not carried back:\n  " + strings.Join(notes, "\n  ")
	}
	e.debugNote(msg)
}
