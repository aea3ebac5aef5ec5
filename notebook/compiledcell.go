package notebook

// Cells as compiled Go (package compiled): the engine's side — turning a
// run's result into the cell's output and its errors into Jupyter errors,
// and keeping the declaration log that %who, completion and the launcher
// read.

import (
	"context"
	"errors"
	"fmt"
	"go/parser"
	"go/types"
	"io"
	"path"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook/build"
	"github.com/goaccel/goaccel/notebook/check"
	"github.com/goaccel/goaccel/notebook/compiled"
	"github.com/goaccel/goaccel/notebook/gen"
	"github.com/goaccel/goaccel/notebook/gxrt"
	"github.com/goaccel/goaccel/notebook/internal/session"
)

// startCompiled prepares compiled cells, or records why they are
// unavailable (cells are then interpreted).
func (e *Engine) startCompiled() {
	if e.opts.Interpret {
		e.compErr = errors.New("interpretation was asked for")
		return
	}
	b, err := build.New(context.Background(), build.Options{CacheDir: e.opts.BuildCache})
	if err != nil {
		e.compErr = err
		return
	}
	e.builder = b
	e.comp = compiled.New(compiled.Options{Builder: b, AutoImport: e.packages.AutoImport, Symbols: e.packages.Linked(), NoEval: e.opts.AlwaysBuild})
	e.comp.Late = func(msg string) { e.out.Stderr(msg + "\n") }
	compiled.SetLaunchName(func(name string, fn any) { e.launchName(name, fn) })
	compiled.SetInput(e.compiledInput)
}

// compiledInput answers a compiled cell's read of standard input: a line
// from the frontend (an input_request), io.EOF when no cell runs or the
// frontend gave none, gxrt.ErrInterrupted when the cell was interrupted
// while it waited, or the reason input cannot be requested (allow_stdin
// is false), which the read returns.
func (e *Engine) compiledInput() (string, error) {
	c := e.cells.Cell()
	if c == nil || !c.Running() {
		return "", io.EOF
	}
	line, err := c.Ask("", false)
	switch {
	case err == nil:
		return line, nil
	case c.Ctx.Err() != nil:
		return "", gxrt.ErrInterrupted
	case errors.Is(err, context.Canceled):
		return "", io.EOF
	}
	return "", err
}

// runCompiled runs a cell as compiled Go.
func (e *Engine) runCompiled(ctx context.Context, c *session.Cell, code string) (frontend.MIMEBundle, *frontend.Error) {
	e.applyGoWork(ctx)
	done := e.builder.Attend(ctx, e.progress)
	res, err := e.comp.Run(ctx, code, c.Count, e.progress)
	done()
	if res != nil {
		for _, p := range res.AutoImports {
			e.out.Stderr(fmt.Sprintf("goaccel: added import %q\n", p))
		}
		for _, w := range res.Warnings {
			e.out.Stderr("goaccel: " + w + "\n")
		}
		e.logBindings(res.Bindings, res.Imports, c.Count)
		if res.Evaluated {
			e.evaluated++
		}
	}
	e.flushOutput()
	if perr := e.interp.GoPanicError(c); perr != nil && err == nil {
		return nil, perr
	}
	var ce *check.Error
	if err != nil && errors.As(err, &ce) && ctx.Err() != nil {
		// Interrupted while the checker's imports were being fetched or
		// built.
		return nil, session.ErrInterrupted()
	}
	if err != nil {
		return nil, e.compiledError(err, code, c.Count)
	}
	if ctx.Err() != nil {
		return nil, session.ErrInterrupted()
	}
	if res.Kind == gen.NoResult || len(res.Values) == 0 {
		return nil, nil
	}
	return resultBundle(res.Values, res.Kind == gen.MultiResult), nil
}

// evalExprCompiled evaluates a user expression (execute_request's
// user_expressions) against the compiled session. It runs as a cell that is
// only an expression, numbered 0: it binds nothing and leaves the cells'
// sources alone.
func (e *Engine) evalExprCompiled(ctx context.Context, expr string) (frontend.MIMEBundle, *frontend.Error) {
	if strings.Contains(expr, "\n") {
		return nil, &frontend.Error{Name: "SyntaxError", Value: "a user expression must be one line: " + expr}
	}
	if _, err := parser.ParseExpr(expr); err != nil {
		return nil, &frontend.Error{Name: "SyntaxError", Value: "not a single expression: " + expr + ": " + err.Error()}
	}
	res, err := e.comp.Run(ctx, expr, 0, nil)
	e.flushOutput()
	if err != nil {
		return nil, e.compiledError(err, expr, 0)
	}
	if res.Kind == gen.NoResult || len(res.Values) == 0 {
		return frontend.MIMEBundle{}, nil
	}
	return resultBundle(res.Values, res.Kind == gen.MultiResult), nil
}

// logBindings keeps the declaration log in step with what compiled cells
// bound.
func (e *Engine) logBindings(bindings []check.Binding, imports []*check.Import, count int) {
	for _, im := range imports {
		src := "import " + strconv.Quote(im.Path)
		if im.Name != "" && im.Name != path.Base(im.Path) {
			src = "import " + im.Name + " " + strconv.Quote(im.Path)
		}
		e.log.AddImport(Declaration{Kind: KindImport, Name: im.Name, Source: src, Path: im.Path, Cell: count})
	}
	qual := e.qualifier()
	var decls []Declaration
	for _, b := range bindings {
		en := b.New
		d := Declaration{Name: en.Name, Cell: count}
		if en.Unit != nil {
			d.Source = en.Unit.Src
			d.SrcCell, d.Line, d.Col = en.Unit.Cell, en.Unit.Line, en.Unit.Col
		}
		switch en.Kind {
		case check.TypeEntry:
			d.Kind = KindType
		case check.FuncEntry:
			d.Kind = KindFunc
			d.Results = en.Obj.Type().(*types.Signature).Results().Len()
		case check.MethodEntry:
			d.Kind = KindMethod
			if en.Recv != nil {
				d.Name = en.Recv.Name + "." + en.Name
			}
			d.Results = en.Obj.Type().(*types.Signature).Results().Len()
		case check.ConstEntry:
			d.Kind = KindConst
			d.Names = []string{en.Name}
			if d.Source == "" {
				d.Source = "const " + en.Name + " " + types.TypeString(en.Obj.Type(), qual) + " = " + en.Obj.(*types.Const).Val().ExactString()
			}
		case check.VarEntry:
			d.Kind = KindVar
			d.Names = []string{en.Name}
			d.Source = "var " + en.Name + " " + types.TypeString(en.Obj.Type(), qual)
			d.FromStatement = true
		}
		decls = append(decls, d)
	}
	e.log.Add(decls...)
}

// qualifier names packages in type strings as the session imports them.
func (e *Engine) qualifier() types.Qualifier {
	byPath := map[string]string{}
	for name, path := range e.log.Imports() {
		byPath[path] = name
	}
	return func(p *types.Package) string {
		if p.Path() == "main" {
			return ""
		}
		if n, ok := byPath[p.Path()]; ok {
			return n
		}
		return p.Name()
	}
}

// compiledError turns what a compiled run returned into the cell's error.
func (e *Engine) compiledError(err error, src string, count int) *frontend.Error {
	var ce *check.Error
	var be *compiled.BuildError
	var p *compiled.Panic
	var ex *compiled.Exit
	var stuck *compiled.Stuck
	var ie *build.ImportError
	switch {
	case errors.As(err, &ce):
		lines := ce.Lines(func(n int) string {
			if n == count {
				return src
			}
			return e.comp.Checker().Source(n)
		})
		if ierr := e.importFailure(ce, lines); ierr != nil {
			return ierr
		}
		name := "CompileError"
		if len(ce.Diags) > 0 && ce.Diags[0].Syntax {
			name = "SyntaxError"
		}
		return &frontend.Error{Name: name, Value: ce.Error(), Traceback: lines}
	case errors.As(err, &ie):
		msg := ie.Error()
		return &frontend.Error{Name: "ImportError", Value: msg, Traceback: []string{msg}}
	case errors.As(err, &be):
		msg := "goaccel could not compile this cell: " + mapGenerated(be.Err.Error())
		tb := []string{msg, "(this is a limit of goaccel's translation of cells to Go packages, not an error in the cell; see LANGUAGE.md)"}
		return &frontend.Error{Name: "BuildError", Value: msg, Traceback: tb}
	case errors.As(err, &p):
		return panicReport(p, e.comp.Locate)
	case errors.As(err, &ex):
		if ex.Code == 0 {
			return nil
		}
		msg := fmt.Sprintf("exit status %d", ex.Code)
		return &frontend.Error{Name: "Exit", Value: msg, Traceback: []string{"os.Exit(" + strconv.Itoa(ex.Code) + "): " + msg + " (the cell stopped; the kernel and its state live on)"}}
	case errors.As(err, &stuck):
		return stuckReport(stuck)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return session.ErrInterrupted()
	}
	msg := err.Error()
	return &frontend.Error{Name: "BuildError", Value: msg, Traceback: []string{msg}}
}

// stuckReport is the error of an interrupted cell whose goroutines did not
// all stop: each is named with what it is doing and where.
func stuckReport(stuck *compiled.Stuck) *frontend.Error {
	n := len(stuck.Goroutines)
	msg := "interrupted, but the cell's goroutine is blocked where it cannot be stopped (outside the cell's code) and keeps running in the background; it stops when it comes back to the cell's code. The state of earlier cells is kept."
	if n != 1 {
		msg = fmt.Sprintf("interrupted, but %d of the cell's goroutines are blocked where they cannot be stopped (outside the cell's code) and keep running in the background; each stops when it comes back to the cell's code. The state of earlier cells is kept.", n)
	}
	tb := []string{"Interrupted: " + msg}
	for _, g := range stuck.Goroutines {
		tb = append(tb, "")
		tb = append(tb, goroutineHeader(g)+":")
		tb = append(tb, stackFrames(g.Stack)...)
	}
	return &frontend.Error{Name: "Interrupted", Value: msg, Traceback: tb}
}

// goroutineHeader describes a cell's goroutine in one line: what it
// waits for, which cell started it where, where it is now.
func goroutineHeader(g compiled.CellGoroutine) string {
	var b strings.Builder
	fmt.Fprintf(&b, "goroutine %d [%s]", g.ID, g.State)
	cell := "a cell"
	if g.Cell > 0 {
		cell = fmt.Sprintf("cell[%d]", g.Cell)
	}
	if g.Origin != "" {
		b.WriteString(" started by " + cell + " at " + g.Origin)
	} else {
		b.WriteString(" running " + cell)
	}
	if g.Stopped {
		b.WriteString(" (interrupted, not stopped yet)")
	}
	if g.Where != "" {
		b.WriteString("; now at " + g.Where + " in " + cellFuncName(g.Func))
	}
	return b.String()
}

// cellFuncName names a function of a cell's package as the cell named it.
func cellFuncName(fn string) string {
	fn = cellFramePkg.ReplaceAllString(fn, "main.")
	fn = strings.ReplaceAll(fn, "_gxE_", "")
	fn = strings.ReplaceAll(fn, "Gxm_", "")
	fn = strings.ReplaceAll(fn, "._gxb_", ".")
	for _, body := range []string{"main._gxrun", "main._gxinit"} {
		if rest, ok := strings.CutPrefix(fn, body); ok && (rest == "" || rest[0] == '(' || rest[0] == '.') {
			fn = "main.<cell>" + rest
		}
	}
	return fn
}

// stackFrames are the frames of a goroutine's stack (as runtime.Stack
// prints it) down to where goaccel started it: cell functions named as the
// cell named them, offsets and goaccel's runtime left out.
func stackFrames(stack string) []string {
	lines := strings.Split(strings.TrimRight(stack, "\n"), "\n")
	var out []string
	for i := 1; i+1 < len(lines); i += 2 {
		fn, loc := lines[i], strings.TrimSpace(lines[i+1])
		if isFrameBottom(fn) {
			break
		}
		if strings.Contains(fn, "notebook/gxrt.") || strings.Contains(loc, "goaccel-generated") {
			continue
		}
		if j := strings.LastIndex(loc, " +0x"); j > 0 {
			loc = loc[:j]
		}
		if j := strings.LastIndexByte(fn, '('); j > 0 {
			fn = fn[:j] + "(...)"
		}
		out = append(out, cellFuncName(fn), "\t"+loc)
	}
	return out
}

// isFrameBottom reports the frame of goaccel's that runs a cell's code or
// one of its goroutines: the frames below it are not the cell's.
func isFrameBottom(fn string) bool {
	return strings.Contains(fn, "notebook/compiled.") || strings.Contains(fn, "notebook/gxrt.Go") || strings.Contains(fn, "notebook/gxrt.start")
}

// generatedPos matches positions in the generated package's file.
var generatedPos = regexp.MustCompile(`\S*/cell\.go:\d+:\d+: `)

func mapGenerated(s string) string { return generatedPos.ReplaceAllString(s, "") }

// panicValue formats a panic value as Go's runtime prints it (the address
// Go prints for composite values gives way to the value).
func panicValue(v any) string {
	switch x := v.(type) {
	case error:
		return x.Error()
	case fmt.Stringer:
		return x.String()
	case string:
		return x
	case nil:
		return "nil"
	case bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, uintptr, float32, float64, complex64, complex128:
		return fmt.Sprint(x)
	}
	return fmt.Sprintf("(%T) %+v", v, v)
}

// panicReport is the error of a cell that panicked: Go's first line and
// the frames of cell code, innermost first.
func panicReport(p *compiled.Panic, locate func(string, *compiled.Panic) string) *frontend.Error {
	val := panicValue(p.Value)
	head := "panic: " + val
	name := "panic"
	if so, ok := p.Value.(gxrt.StackOverflow); ok {
		// Go would end the program here; the guard ended only the cell.
		name = "StackOverflow"
		head = fmt.Sprintf("runtime: goroutine stack exceeds %d-byte limit\nfatal error: stack overflow (goaccel stopped the cell; the session lives on)", so.Limit)
	}
	if err, ok := p.Value.(error); ok && isRuntimeError(err) && strings.Contains(val, "nil pointer") {
		head += "\n[signal SIGSEGV: segmentation violation]"
	}
	tb := []string{head, ""}
	frames := cellFrames(string(p.Stack))
	// The innermost cell frame gets a column.
	for i := 1; i < len(frames); i += 2 {
		if loc := strings.TrimPrefix(frames[i], "\t"); strings.HasPrefix(loc, "cell[") {
			frames[i] = "\t" + locate(loc, p)
			break
		}
	}
	if p.Goroutine {
		tb = append(tb, "goroutine started by the cell [running]:")
	} else {
		tb = append(tb, "goroutine [running]:")
	}
	tb = append(tb, frames...)
	return &frontend.Error{Name: name, Value: val, Traceback: tb}
}

func isRuntimeError(err error) bool {
	type runtimeError interface{ RuntimeError() }
	var re runtimeError
	return errors.As(err, &re)
}

// cellFramePkg matches the package path part of a cell function's name.
var cellFramePkg = regexp.MustCompile(`goaccel\.cells/(?:[^/\s]+/)*c[0-9a-f]+(?:_\d+)?\.`)

// cellFrames extracts from a goroutine's stack the frames from the panic
// down to the cell's own code, with cell functions named as the cell named
// them (main.f) and offsets dropped.
func cellFrames(stack string) []string {
	lines := strings.Split(strings.TrimRight(stack, "\n"), "\n")
	var out []string
	started := false
	for i := 1; i+1 < len(lines); i += 2 {
		fn, loc := lines[i], strings.TrimSpace(lines[i+1])
		if !started {
			if strings.HasPrefix(fn, "panic(") {
				started = true
			}
			continue
		}
		if isFrameBottom(fn) {
			break
		}
		if strings.Contains(fn, "notebook/gxrt.") || strings.Contains(loc, "goaccel-generated") {
			continue
		}
		if i := strings.LastIndex(loc, " +0x"); i > 0 {
			loc = loc[:i]
		}
		out = append(out, cellFuncName(fn), "\t"+loc)
	}
	if !started {
		return nil
	}
	return out
}

// compiledValues are the compiled session's variables with their values.
func (e *Engine) compiledValues() []session.Var {
	var out []session.Var
	for _, v := range e.comp.Entries() {
		if !session.Hidden(v.Name) {
			out = append(out, session.Var{Name: v.Name, Type: v.Type, Value: v.Value})
		}
	}
	return out
}

// compiledSide is the compiled session as the debugger's moves between the
// runners see it (yaegirunner.Compiled).
type compiledSide struct{ e *Engine }

// Vars are the session's variables that have storage, typed as a cell
// declares them: packages by the names cells import them under, and a
// package no cell imported under a name (_gxdN) that extra imports.
func (c compiledSide) Vars(imports map[string]string) (vars []session.Var, extra []string) {
	local := map[string]string{}
	for n, p := range imports {
		local[p] = n
	}
	n := 0
	qual := func(p *types.Package) string {
		if p.Path() == "main" {
			return ""
		}
		if name, ok := local[p.Path()]; ok {
			return name
		}
		n++
		name := "_gxd" + strconv.Itoa(n)
		local[p.Path()] = name
		return name
	}
	comp := c.e.comp
	for _, en := range comp.Checker().Entries() {
		if en.Kind != check.VarEntry || session.Hidden(en.Name) {
			continue
		}
		if _, ok := comp.Value(en.Name); !ok {
			continue
		}
		vars = append(vars, session.Var{Name: en.Name, Type: types.TypeString(en.Obj.Type(), qual)})
	}
	for path, name := range local {
		if strings.HasPrefix(name, "_gxd") {
			extra = append(extra, fmt.Sprintf("import %s %q", name, path))
		}
	}
	sort.Strings(extra)
	return vars, extra
}

func (c compiledSide) Values() []session.Var { return c.e.compiledValues() }

func (c compiledSide) Value(name string) (reflect.Value, bool) { return c.e.comp.Value(name) }

// Declare runs src, declarations only, as cell n, and logs what it bound.
func (c compiledSide) Declare(ctx context.Context, src string, n int) *frontend.Error {
	e := c.e
	res, err := e.comp.Run(ctx, src, n, e.progress)
	if res != nil {
		e.logBindings(res.Bindings, res.Imports, n)
	}
	if err != nil {
		return e.compiledError(err, src, n)
	}
	return nil
}
