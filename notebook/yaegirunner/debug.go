package yaegirunner

// The runner's side of the debugger (the adapter is package notebook/dap):
// while a debug session is active the engine attaches the adapter, and the
// statements of interpreted cells run under yaegi's debugger. The programs
// compiled from cell code are kept either way, so that breakpoints reach
// functions declared before the session began. adopt.go moves a compiled
// session into the interpreter and back.

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

	"github.com/goaccel/goaccel/notebook/dap"
	"github.com/goaccel/goaccel/notebook/internal/session"
)

// Attach makes a the debugger of the cells this runner runs from the next
// one on: a receives the programs compiled so far and every later one.
func (r *Runner) Attach(a *dap.Adapter) {
	r.progMu.Lock()
	defer r.progMu.Unlock()
	r.dbg.Store(a)
	a.ResetPrograms()
	for _, p := range r.programs {
		a.AddProgram(p.prog, p.cell)
	}
}

// Detach ends the debug session: cells run without the debugger.
func (r *Runner) Detach() {
	r.progMu.Lock()
	defer r.progMu.Unlock()
	r.dbg.Store(nil)
}

// debugger is the attached adapter, nil when no debug session is active.
func (r *Runner) debugger() *dap.Adapter { return r.dbg.Load() }

// addProgram keeps prog, compiled from code of cell (0: several cells,
// lines encoded by dap.EncodeLine), for the debugger.
func (r *Runner) addProgram(prog *interp.Program, cell int) {
	r.progMu.Lock()
	defer r.progMu.Unlock()
	r.programs = append(r.programs, program{prog, cell})
	if a := r.dbg.Load(); a != nil {
		a.AddProgram(prog, cell)
	}
}

// resetPrograms forgets the programs (the interpreter was replaced).
func (r *Runner) resetPrograms() {
	r.progMu.Lock()
	defer r.progMu.Unlock()
	r.programs = nil
	if a := r.dbg.Load(); a != nil {
		a.ResetPrograms()
	}
}

// TypeName names an interpreted value's type as cells write it (the
// interpreter's reflect types of declared types have no names); "" when it
// does not know.
func (r *Runner) TypeName(t reflect.Type) string {
	m := r.dbgNames.Load()
	if m == nil {
		return ""
	}
	if n, ok := (*m)[t]; ok {
		return n
	}
	switch t.Kind() {
	case reflect.Pointer:
		if n, ok := (*m)[t.Elem()]; ok {
			return "*" + n
		}
	case reflect.Slice:
		if n, ok := (*m)[t.Elem()]; ok {
			return "[]" + n
		}
	}
	return ""
}

// debugNote tells the user something about debugging: on the cell's stderr
// and in the debugger's console.
func (r *Runner) debugNote(a *dap.Adapter, msg string) {
	r.out.Stderr(msg + "\n")
	a.Output("important", msg+"\n")
}

// runBody runs a cell's statements: under the debugger while one is
// attached.
func (r *Runner) runBody(ctx context.Context, it *interp.Interpreter, cs *cellState, prog *interp.Program) error {
	a := r.debugger()
	if a == nil || !a.Attached() {
		return r.runProgram(ctx, it, prog)
	}
	if names, err := r.typeNames(r.log.Declarations()); err == nil {
		r.dbgNames.Store(&names)
	}
	err := a.Run(ctx, it, prog)
	r.keepCopied(a, it, cs)
	return err
}

// keepCopied declares the variables copyToGlobals made while the cell was
// stopped.
func (r *Runner) keepCopied(a *dap.Adapter, it *interp.Interpreter, cs *cellState) {
	copied := a.TakeCopied()
	if len(copied) == 0 {
		return
	}
	names, _ := r.typeNames(r.log.Declarations())
	local := map[string]string{}
	for n, p := range r.log.Imports() {
		local[p] = n
	}
	for _, c := range copied {
		texpr, err := typeExpr(c.Value.Type(), names, local)
		if err == nil {
			err = r.declareVar(it, c.Name, texpr, c.Value)
		}
		if err != nil {
			r.debugNote(a, fmt.Sprintf("goaccel: copyToGlobals: %s could not become a session variable: %v", c.Name, err))
			continue
		}
		r.log.Add(session.Declaration{Kind: session.KindVar, Name: c.Name, Names: []string{c.Name}, Source: "var " + c.Name + " " + texpr,
			FromStatement: true, Cell: cs.cell.Count})
	}
}

// declareVar declares `var name texpr` in it and sets it to v.
func (r *Runner) declareVar(it *interp.Interpreter, name, texpr string, v reflect.Value) error {
	f, err := parser.ParseFile(it.FileSet(), "_.go", "package main\n//line goaccel/_.go:1:1\nvar "+name+" "+texpr+"\n", 0)
	if err != nil {
		return fmt.Errorf("declaring it: %w", err)
	}
	prog, err := compileAST(it, f)
	if err == nil {
		err = r.runProgram(context.Background(), it, prog)
	}
	if err != nil {
		return fmt.Errorf("declaring it as %s: %w", texpr, err)
	}
	dst, ok := it.Globals()[name]
	if !ok || !dst.CanSet() || !v.Type().AssignableTo(dst.Type()) {
		return fmt.Errorf("its value (%s) does not fit the declared %s", v.Type(), texpr)
	}
	dst.Set(v)
	return nil
}

// lineDirective positions what follows at line of cell n (encoded, so one
// file can hold several cells' code; see dap.EncodeLine).
func lineDirective(n, line, col int) string {
	if n <= 0 || line <= 0 {
		return "//line goaccel/_.go:1:1\n"
	}
	return fmt.Sprintf("//line %s:%d:%d\n", cellFileName(n), dap.EncodeLine(n, line), max(col, 1))
}

// decodedPositions rewrites encoded lines in positions of a message.
func decodedPositions(s string) string {
	return encodedPos.ReplaceAllStringFunc(s, func(m string) string {
		sub := encodedPos.FindStringSubmatch(m)
		line, err := strconv.Atoi(sub[2])
		if err != nil {
			return m
		}
		return sub[1] + strconv.Itoa(line%dap.LineBase)
	})
}

// encodedPos matches a cell position whose line is encoded.
var encodedPos = regexp.MustCompile(`(cell\[\d+\](?:/_\.go)?:)(\d{7,})`)

// TypeExpr returns a function that writes the type of an interpreted value
// as Go source valid in a cell: the types cells declared by their names,
// other packages' types by the names cells import them under.
func (r *Runner) TypeExpr() func(reflect.Type) (string, error) {
	names, _ := r.typeNames(r.log.Declarations())
	local := map[string]string{}
	for n, p := range r.log.Imports() {
		local[p] = n
	}
	return func(t reflect.Type) (string, error) { return typeExpr(t, names, local) }
}

// typeNames maps the reflect types yaegi gives cell-declared types to their
// names (interpreted named types show up in reflect as unnamed types).
func (r *Runner) typeNames(decls []session.Declaration) (map[reflect.Type]string, error) {
	out := map[reflect.Type]string{}
	c := r.cells.Cell()
	it := r.interp()
	if c == nil || it == nil {
		return out, nil
	}
	for _, d := range decls {
		if d.Kind != session.KindType || strings.Contains(d.Source, "[") && isGenericType(d.Source) {
			continue
		}
		prog, err := compileProbe(it, "type_query/_.go", "_gxrt.TypeOf(new("+d.Name+"))")
		if err != nil {
			continue
		}
		r.probeMu.Lock()
		r.probedType = nil
		r.probeMu.Unlock()
		if err := r.runProgram(context.Background(), it, prog); err != nil {
			continue
		}
		r.probeMu.Lock()
		t := r.probedType
		r.probeMu.Unlock()
		if t != nil && t.Kind() == reflect.Pointer {
			if _, dup := out[t.Elem()]; !dup {
				out[t.Elem()] = d.Name
			}
		}
	}
	return out, nil
}

func isGenericType(src string) bool {
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+src, 0)
	if err != nil {
		return false
	}
	for _, d := range f.Decls {
		if gd, ok := d.(*ast.GenDecl); ok {
			for _, s := range gd.Specs {
				if ts, ok := s.(*ast.TypeSpec); ok && ts.TypeParams != nil {
					return true
				}
			}
		}
	}
	return false
}

// typeExpr writes t as Go source valid in cells (of a worker too).
func typeExpr(t reflect.Type, named map[reflect.Type]string, pkgLocal map[string]string) (string, error) {
	if n, ok := named[t]; ok {
		return n, nil
	}
	if t.Name() != "" {
		if t.PkgPath() == "" {
			return t.Name(), nil // predeclared
		}
		local, ok := pkgLocal[t.PkgPath()]
		if !ok {
			return "", fmt.Errorf("its type %s comes from package %s, which no cell imports", t, t.PkgPath())
		}
		return local + "." + t.Name(), nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		s, err := typeExpr(t.Elem(), named, pkgLocal)
		return "*" + s, err
	case reflect.Slice:
		s, err := typeExpr(t.Elem(), named, pkgLocal)
		return "[]" + s, err
	case reflect.Array:
		s, err := typeExpr(t.Elem(), named, pkgLocal)
		return "[" + strconv.Itoa(t.Len()) + "]" + s, err
	case reflect.Map:
		k, err := typeExpr(t.Key(), named, pkgLocal)
		if err != nil {
			return "", err
		}
		v, err := typeExpr(t.Elem(), named, pkgLocal)
		return "map[" + k + "]" + v, err
	case reflect.Struct:
		var b strings.Builder
		b.WriteString("struct{")
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			ft, err := typeExpr(f.Type, named, pkgLocal)
			if err != nil {
				return "", err
			}
			if i > 0 {
				b.WriteString("; ")
			}
			if f.Anonymous {
				b.WriteString(ft)
			} else {
				b.WriteString(f.Name + " " + ft)
			}
			if f.Tag != "" {
				b.WriteString(" " + strconv.Quote(string(f.Tag)))
			}
		}
		b.WriteString("}")
		return b.String(), nil
	case reflect.Interface:
		if t.NumMethod() == 0 {
			return "interface{}", nil
		}
	}
	return "", fmt.Errorf("its type %s (%s) cannot travel between processes", t, t.Kind())
}
