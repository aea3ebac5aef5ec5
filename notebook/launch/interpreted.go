package launch

// Launches when cells are interpreted: the declarations travel from the
// log, by source, every global variable as a typed declaration, and the
// values the function reaches as JSON; the worker's interpreted cells
// restore them through the runtime hooks (Decode) and report the results
// (Result, ResultErr).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/display"
	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/launcher"
	"github.com/goaccel/goaccel/notebook/internal/session"
)

// prepareInterpreted is Prepare for interpreted cells: the declarations
// come from the log, the variables' values and types from the interpreter.
func (s *Session) prepareInterpreted(args []any) ([]byte, error) {
	s.mu.Lock()
	name := s.fn
	s.mu.Unlock()
	if name == "" {
		return nil, errors.New("the function to launch must be a function declared in a cell (func train(...) {...}), passed by its name")
	}
	s.note(name)
	decls := s.opts.Log.Declarations()
	var fnDecl *ast.FuncDecl
	var p launchPayload
	p.Func = name
	funcSrc := map[string]string{}
	varNames := map[string]bool{}
	for _, d := range decls {
		switch d.Kind {
		case session.KindImport:
			p.Imports = append(p.Imports, d.Source)
		case session.KindType, session.KindConst:
			p.Decls = append(p.Decls, d.Source)
		case session.KindFunc, session.KindMethod:
			p.Decls = append(p.Decls, d.Source)
			funcSrc[d.Name] = d.Source
			if d.Kind == session.KindFunc && d.Name == name {
				f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+d.Source, 0)
				if err == nil {
					for _, dd := range f.Decls {
						if fd, ok := dd.(*ast.FuncDecl); ok {
							fnDecl = fd
						}
					}
				}
			}
		case session.KindVar:
			names := d.Names
			if len(names) == 0 {
				names = []string{d.Name}
			}
			for _, n := range names {
				if n != "_" && !strings.HasPrefix(n, "_gx") {
					varNames[n] = true
				}
			}
		}
	}
	if fnDecl == nil {
		return nil, fmt.Errorf("%s is not a function declared in a cell; launched functions must be declared with func %s(...) so the workers can rebuild them", name, name)
	}
	if fnDecl.Type.TypeParams != nil {
		return nil, fmt.Errorf("%s is generic; launch a non-generic function", name)
	}
	for _, f := range fieldList(fnDecl.Type.Params) {
		t := exprString(f)
		if el, ok := f.(*ast.Ellipsis); ok {
			p.Variadic = true
			t = "[]" + exprString(el.Elt)
		}
		p.Params = append(p.Params, t)
	}
	for _, f := range fieldList(fnDecl.Type.Results) {
		p.Results = append(p.Results, exprString(f))
	}
	var err error
	if p.Args, err = encodeArgs(name, len(p.Params), p.Variadic, args); err != nil {
		return nil, err
	}

	reach := reachableVars(name, funcSrc, varNames)
	typeExpr := s.opts.Interpreted.TypeExpr()
	globals := s.opts.Interpreted.Globals()
	names := make([]string, 0, len(varNames))
	for n := range varNames {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		v, ok := globals[n]
		if !ok || !v.IsValid() {
			continue
		}
		texpr, terr := typeExpr(v.Type())
		cv := carriedVar{Name: n, Type: texpr}
		if !reach[n] {
			if terr != nil {
				continue // unreachable and not declarable: leave it out
			}
			p.Vars = append(p.Vars, cv)
			continue
		}
		if terr != nil {
			return nil, fmt.Errorf("global variable %s, which %s uses, cannot be carried to the workers: %w", n, name, terr)
		}
		b, err := carryValue(v)
		if err != nil {
			return nil, fmt.Errorf("global variable %s (%s), which %s uses, cannot be carried to the workers: %w", n, texpr, name, err)
		}
		if b == nil {
			return nil, fmt.Errorf("global variable %s (%s), which %s uses, cannot be carried to the workers exactly (only exported fields and JSON-encodable values travel); make it a parameter of %s or compute it inside", n, texpr, name, name)
		}
		cv.Value = b
		p.Vars = append(p.Vars, cv)
	}
	return json.Marshal(p)
}

// decodeInterpreted decodes the results of an interpreted launch into the
// declared result types when those are builtin types or composites of
// them; other types arrive as their JSON shape (maps, slices, float64).
func decodeInterpreted(p launchPayload, rank int, raw []json.RawMessage) ([]any, error) {
	out := make([]any, len(raw))
	for i, r := range raw {
		var t reflect.Type
		if i < len(p.Results) {
			t = builtinType(p.Results[i])
		}
		if t == nil {
			var v any
			if err := json.Unmarshal(r, &v); err != nil {
				return nil, fmt.Errorf("rank %d result %d: %w", rank, i, err)
			}
			out[i] = v
			continue
		}
		pv := reflect.New(t)
		if err := json.Unmarshal(r, pv.Interface()); err != nil {
			return nil, fmt.Errorf("rank %d result %d (%s): %w", rank, i, p.Results[i], err)
		}
		out[i] = pv.Elem().Interface()
	}
	return out, nil
}

// runInterpreted is Run for interpreted cells: the worker's cells replay
// the declarations, the runtime hooks (Decode) restore the carried values,
// and the results come back through Result and ResultErr.
func (s *Session) runInterpreted(ctx context.Context, p launchPayload) ([]byte, error) {
	io := &workerIO{forward: display.Current()}
	run := func(what, code string) error {
		if strings.TrimSpace(code) == "" {
			return nil
		}
		rep := s.opts.Execute(ctx, frontend.ExecuteRequest{Code: code, Silent: true}, io)
		if rep.Err != nil {
			if rep.Err.Name == "panic" {
				return &launcher.PanicError{Value: rep.Err.Value, Stack: strings.Join(rep.Err.Traceback, "\n")}
			}
			if what != "" {
				return fmt.Errorf("%s: %s: %s\n%s", what, rep.Err.Name, rep.Err.Value, strings.Join(rep.Err.Traceback, "\n"))
			}
			return fmt.Errorf("%s: %s", rep.Err.Name, rep.Err.Value)
		}
		return nil
	}
	if err := run("replaying the notebook's imports", strings.Join(p.Imports, "\n")); err != nil {
		return nil, err
	}
	var decl strings.Builder
	for _, d := range p.Decls {
		decl.WriteString(d)
		decl.WriteString("\n")
	}
	for _, v := range p.Vars {
		fmt.Fprintf(&decl, "var %s %s\n", v.Name, v.Type)
	}
	if err := run("replaying the notebook's declarations", decl.String()); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.carried = map[string][]byte{}
	for _, v := range p.Vars {
		if v.Value != nil {
			s.carried[v.Name] = v.Value
		}
	}
	for i, a := range p.Args {
		s.carried["_gxa"+strconv.Itoa(i)] = a
	}
	s.results = nil
	s.mu.Unlock()

	var call strings.Builder
	for _, v := range p.Vars {
		if v.Value != nil {
			fmt.Fprintf(&call, "_gxrt.Decode(%q, &%s)\n", v.Name, v.Name)
		}
	}
	var args []string
	for i, t := range p.Params {
		fmt.Fprintf(&call, "var _gxa%d %s\n_gxrt.Decode(%q, &_gxa%d)\n", i, t, "_gxa"+strconv.Itoa(i), i)
		a := "_gxa" + strconv.Itoa(i)
		if p.Variadic && i == len(p.Params)-1 {
			a += "..."
		}
		args = append(args, a)
	}
	var res []string
	for i := range p.Results {
		res = append(res, "_gxr"+strconv.Itoa(i))
	}
	invoke := p.Func + "(" + strings.Join(args, ", ") + ")"
	if len(res) > 0 {
		fmt.Fprintf(&call, "%s := %s\n", strings.Join(res, ", "), invoke)
		for i, r := range res {
			if i == len(res)-1 && p.Results[i] == "error" {
				fmt.Fprintf(&call, "if %s != nil {\n\t_gxrt.ResultErr(%s.Error())\n}\n", r, r)
				continue
			}
			fmt.Fprintf(&call, "_gxrt.Result(%d, %s)\n", i, r)
		}
	} else {
		call.WriteString(invoke + "\n")
	}
	if err := run("", call.String()); err != nil {
		return nil, err
	}
	s.mu.Lock()
	results, resErr := s.results, s.resultErr
	s.mu.Unlock()
	out := make([]json.RawMessage, len(p.Results))
	for i := range out {
		out[i] = json.RawMessage("null")
		if i < len(results) && results[i] != nil {
			out[i] = results[i]
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	if resErr != "" {
		return b, errors.New(resErr)
	}
	return b, nil
}

// decodeCarried fills ptr with the carried value called name.
func (s *Session) Decode(name string, ptr any) {
	s.mu.Lock()
	b := s.carried[name]
	s.mu.Unlock()
	if b == nil {
		return
	}
	if err := json.Unmarshal(b, ptr); err != nil {
		panic(fmt.Sprintf("goaccel: restoring %s in the worker: %v", name, err))
	}
}

func (s *Session) Result(i int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("goaccel: result %d of the launched function cannot be sent back: %v", i, err))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.results) <= i {
		s.results = append(s.results, nil)
	}
	s.results[i] = b
}

// setLaunchErr records the error the launched function returned. It takes
// the text: yaegi v0.16.1 mis-binds compiled functions with an error
// parameter in this position.
func (s *Session) ResultErr(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resultErr = msg
}

// builtinType is the reflect type of a result type expression built only
// from predeclared types, or nil.
func builtinType(expr string) reflect.Type {
	x, err := parser.ParseExpr(expr)
	if err != nil {
		return nil
	}
	var conv func(ast.Expr) reflect.Type
	conv = func(x ast.Expr) reflect.Type {
		switch x := x.(type) {
		case *ast.Ident:
			return predeclared[x.Name]
		case *ast.ArrayType:
			el := conv(x.Elt)
			if el == nil {
				return nil
			}
			if x.Len == nil {
				return reflect.SliceOf(el)
			}
			lit, ok := x.Len.(*ast.BasicLit)
			if !ok {
				return nil
			}
			n, err := strconv.Atoi(lit.Value)
			if err != nil {
				return nil
			}
			return reflect.ArrayOf(n, el)
		case *ast.MapType:
			k, v := conv(x.Key), conv(x.Value)
			if k == nil || v == nil {
				return nil
			}
			return reflect.MapOf(k, v)
		}
		return nil
	}
	return conv(x)
}

var predeclared = map[string]reflect.Type{
	"bool": reflect.TypeOf(false), "string": reflect.TypeOf(""),
	"int": reflect.TypeOf(0), "int8": reflect.TypeOf(int8(0)), "int16": reflect.TypeOf(int16(0)),
	"int32": reflect.TypeOf(int32(0)), "int64": reflect.TypeOf(int64(0)),
	"uint": reflect.TypeOf(uint(0)), "uint8": reflect.TypeOf(uint8(0)), "uint16": reflect.TypeOf(uint16(0)),
	"uint32": reflect.TypeOf(uint32(0)), "uint64": reflect.TypeOf(uint64(0)),
	"float32": reflect.TypeOf(float32(0)), "float64": reflect.TypeOf(float64(0)),
	"byte": reflect.TypeOf(byte(0)), "rune": reflect.TypeOf(rune(0)),
	"any": reflect.TypeOf((*any)(nil)).Elem(),
}

// reachableVars returns the global variables the function called name can
// reach through the functions and methods it calls (by identifier).
func reachableVars(name string, funcSrc map[string]string, vars map[string]bool) map[string]bool {
	// method names → sources (a call x.M() reaches every method M)
	byIdent := map[string][]string{}
	for n, src := range funcSrc {
		short := n[strings.LastIndex(n, ".")+1:]
		byIdent[short] = append(byIdent[short], src)
	}
	seen := map[string]bool{}
	reach := map[string]bool{}
	queue := []string{funcSrc[name]}
	for len(queue) > 0 {
		src := queue[0]
		queue = queue[1:]
		if seen[src] {
			continue
		}
		seen[src] = true
		f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+src, 0)
		if err != nil {
			continue
		}
		// Within one parsed declaration, go/parser resolves identifiers
		// declared inside it (parameters, locals); a global of the notebook
		// stays unresolved (Obj == nil). Field and method names after a dot
		// are not variables.
		sels := map[*ast.Ident]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			if se, ok := n.(*ast.SelectorExpr); ok {
				sels[se.Sel] = true
			}
			return true
		})
		ast.Inspect(f, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			if vars[id.Name] && id.Obj == nil && !sels[id] {
				reach[id.Name] = true
			}
			queue = append(queue, byIdent[id.Name]...)
			return true
		})
	}
	return reach
}

func fieldList(fl *ast.FieldList) []ast.Expr {
	if fl == nil {
		return nil
	}
	var out []ast.Expr
	for _, f := range fl.List {
		n := len(f.Names)
		if n == 0 {
			n = 1
		}
		for i := 0; i < n; i++ {
			out = append(out, f.Type)
		}
	}
	return out
}

func exprString(x ast.Expr) string {
	var b strings.Builder
	_ = printerFprint(&b, x)
	return b.String()
}

var (
	osStdout = os.Stdout
	osStderr = os.Stderr
)

func printerFprint(w io.Writer, x ast.Expr) error {
	return printer.Fprint(w, token.NewFileSet(), x)
}
