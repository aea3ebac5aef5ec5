package notebook

// The notebook side of launcher.NotebookLauncher and
// debuglauncher.DebugLauncher. Go cannot fork a running runtime, so a
// launched worker is a fresh process with a fresh interpreter; this file
// carries what it needs there, the way fork would:
//
//   - which function: the rewriter wraps the function argument of every
//     launcher call in _gxrt.LaunchName("train", train), so the engine knows
//     the function's name when the launcher asks (Go function values carry
//     no name the interpreter could give back);
//   - everything cells declared (imports, types, funcs, methods, consts), by
//     source, and every global variable as a typed declaration without its
//     initializer (statements are never run again);
//   - the current values of the globals the function can reach, as JSON,
//     checked by a round trip so that a value that cannot be carried exactly
//     is an error naming the variable instead of a silent change.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/display"
	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/launcher"
	"github.com/goaccel/goaccel/notebook/build"
)

// launchPayload is what Prepare hands the workers.
type launchPayload struct {
	Func    string            `json:"func"`
	Imports []string          `json:"imports"`
	Decls   []string          `json:"decls"`
	Vars    []carriedVar      `json:"vars"`
	Params  []string          `json:"params"`  // parameter type expressions
	Results []string          `json:"results"` // result type expressions
	Args    []json.RawMessage `json:"args"`
	// Variadic marks a function whose last parameter is ...T (Params holds []T).
	Variadic bool `json:"variadic,omitempty"`
	// Build is the kernel's cell builder state: the session module and the
	// export data it knows (compiled cells; see prebuildWorker), so that
	// the workers import what the cells import, at the same versions.
	Build *build.State `json:"build,omitempty"`
}

type carriedVar struct {
	Name  string          `json:"name"`
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value,omitempty"`
}

// launchName records the name of the function about to be launched.
func (e *Engine) launchName(name string, fn any) any {
	e.launchMu.Lock()
	e.launchFunc = name
	e.launchFuncPtr = funcPointer(fn)
	e.launchMu.Unlock()
	return fn
}

// funcPointer identifies a function value (0 for anything else).
func funcPointer(fn any) uintptr {
	if v := reflect.ValueOf(fn); v.Kind() == reflect.Func {
		return v.Pointer()
	}
	return 0
}

// Prepare implements launcher.Session.
func (e *Engine) Prepare(fn any, args []any) ([]byte, error) {
	if e.compiled != nil {
		return e.prepareCompiled(fn, args)
	}
	e.launchMu.Lock()
	name := e.launchFunc
	e.launchMu.Unlock()
	if name == "" {
		return nil, errors.New("the function to launch must be a function declared in a cell (func train(...) {...}), passed by its name")
	}
	e.noteLaunch(name)
	decls := e.Declarations()
	var fnDecl *ast.FuncDecl
	var p launchPayload
	p.Func = name
	funcSrc := map[string]string{}
	varNames := map[string]bool{}
	for _, d := range decls {
		switch d.Kind {
		case KindImport:
			p.Imports = append(p.Imports, d.Source)
		case KindType, KindConst:
			p.Decls = append(p.Decls, d.Source)
		case KindFunc, KindMethod:
			p.Decls = append(p.Decls, d.Source)
			funcSrc[d.Name] = d.Source
			if d.Kind == KindFunc && d.Name == name {
				f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+d.Source, 0)
				if err == nil {
					for _, dd := range f.Decls {
						if fd, ok := dd.(*ast.FuncDecl); ok {
							fnDecl = fd
						}
					}
				}
			}
		case KindVar:
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
	typeExpr := e.interp.TypeExpr()
	globals := e.interp.Globals()
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

// DecodeResults implements launcher.Session: results come back as JSON and
// are decoded into the declared result types when those are builtin types
// or composites of them; other types arrive as their JSON shape (maps,
// slices, float64).
func (e *Engine) DecodeResults(payload []byte, rank int, encoded []byte) ([]any, error) {
	var p launchPayload
	if err := json.Unmarshal(payload, &p); err != nil {
		return nil, fmt.Errorf("reading the launch payload: %w", err)
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(encoded, &raw); err != nil {
		return nil, fmt.Errorf("rank %d sent unreadable results: %w", rank, err)
	}
	if outs := e.resultTypesOf(payload); outs != nil {
		return decodeCompiledResults(outs, rank, raw)
	}
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

// Run implements launcher.WorkerRuntime: in a worker process, rebuild the
// session from the payload and call the function.
func (e *Engine) Run(ctx context.Context, payload []byte) ([]byte, error) {
	var p launchPayload
	if err := json.Unmarshal(payload, &p); err != nil {
		return nil, fmt.Errorf("reading the launch payload: %w", err)
	}
	if e.compiled != nil {
		return e.runCompiledWorker(ctx, p)
	}
	io := &workerIO{forward: display.Current()}
	run := func(what, code string) error {
		if strings.TrimSpace(code) == "" {
			return nil
		}
		rep := e.Execute(ctx, frontend.ExecuteRequest{Code: code, Silent: true}, io)
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
	e.launchMu.Lock()
	e.carried = map[string][]byte{}
	for _, v := range p.Vars {
		if v.Value != nil {
			e.carried[v.Name] = v.Value
		}
	}
	for i, a := range p.Args {
		e.carried["_gxa"+strconv.Itoa(i)] = a
	}
	e.results = nil
	e.launchMu.Unlock()

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
	e.launchMu.Lock()
	results, resErr := e.results, e.resultErr
	e.launchMu.Unlock()
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

// launchHooks is where interpreted cells report launches
// (yaegirunner.Launches).
type launchHooks struct{ e *Engine }

func (h launchHooks) Name(name string, fn any) any { return h.e.launchName(name, fn) }
func (h launchHooks) Decode(name string, ptr any)  { h.e.decodeCarried(name, ptr) }
func (h launchHooks) Result(i int, v any)          { h.e.setLaunchResult(i, v) }
func (h launchHooks) ResultErr(msg string)         { h.e.setLaunchErr(msg) }

// decodeCarried fills ptr with the carried value called name.
func (e *Engine) decodeCarried(name string, ptr any) {
	e.launchMu.Lock()
	b := e.carried[name]
	e.launchMu.Unlock()
	if b == nil {
		return
	}
	if err := json.Unmarshal(b, ptr); err != nil {
		panic(fmt.Sprintf("goaccel: restoring %s in the worker: %v", name, err))
	}
}

func (e *Engine) setLaunchResult(i int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("goaccel: result %d of the launched function cannot be sent back: %v", i, err))
	}
	e.launchMu.Lock()
	defer e.launchMu.Unlock()
	for len(e.results) <= i {
		e.results = append(e.results, nil)
	}
	e.results[i] = b
}

// setLaunchErr records the error the launched function returned. It takes
// the text: yaegi v0.16.1 mis-binds compiled functions with an error
// parameter in this position.
func (e *Engine) setLaunchErr(msg string) {
	e.launchMu.Lock()
	defer e.launchMu.Unlock()
	e.resultErr = msg
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

// workerIO is a launched worker's CellIO: text goes to the process's stdout
// and stderr (pipes the launcher reads and prefixes), displays to the sink
// the worker runtime installed (forwarded to the kernel).
type workerIO struct {
	forward frontend.Publisher
}

func (w *workerIO) Stream(name, text string) {
	f := osStdout
	if name == "stderr" {
		f = osStderr
	}
	_, _ = f.WriteString(text)
}

func (w *workerIO) Display(data frontend.MIMEBundle, md map[string]any, id string) {
	if w.forward != nil {
		w.forward.Display(data, md, id)
	}
}

func (w *workerIO) UpdateDisplay(data frontend.MIMEBundle, md map[string]any, id string) {
	if w.forward != nil {
		w.forward.UpdateDisplay(data, md, id)
	}
}

func (w *workerIO) ClearOutput(wait bool) {
	if w.forward != nil {
		w.forward.ClearOutput(wait)
	}
}

func (w *workerIO) Input(context.Context, string, bool) (string, error) {
	return "", errors.New("stdin is not available in launched workers; read input in the notebook and pass it as an argument")
}
