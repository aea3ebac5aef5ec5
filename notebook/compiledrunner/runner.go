package compiledrunner

import (
	"context"
	"errors"
	"fmt"
	"go/parser"
	"go/types"
	"io"
	"os"
	"path"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook/autoimport"
	"github.com/goaccel/goaccel/notebook/build"
	"github.com/goaccel/goaccel/notebook/check"
	"github.com/goaccel/goaccel/notebook/compiled"
	"github.com/goaccel/goaccel/notebook/gen"
	"github.com/goaccel/goaccel/notebook/gxrt"
	"github.com/goaccel/goaccel/notebook/internal/session"
)

// Options configure a Runner.
type Options struct {
	// BuildCache is where built cells are cached (see build.Options).
	BuildCache string
	// AlwaysBuild builds every cell, also those package eval could run.
	AlwaysBuild bool
	// Symbols are the packages linked into the kernel that evaluated cells
	// call (see compiled.Options); AutoImport resolves the package names
	// cells use without importing them.
	Symbols    map[string]map[string]reflect.Value
	AutoImport func(name string) string
	// Log, Output and Cells are the session's (see package session).
	Log    *session.Log
	Output *session.Output
	Cells  *session.Current
	// GoPanics reports the panics that goroutines of interpreted cells
	// reported while cell c ran (see yaegirunner.Runner.GoPanicError).
	GoPanics func(c *session.Cell) *frontend.Error
	// LaunchName records the name of a function a launcher call is given.
	LaunchName func(name string, fn any)
	// Flush sends what cells wrote to fds 1 and 2 so far.
	Flush func()
}

// Runner runs cells as compiled Go (check → gen → build → compiled; simple
// cells evaluated by package eval) and turns what a run gives into the
// cell's result and errors. It implements session.Runner; its methods are
// called by one engine, one cell at a time.
type Runner struct {
	opts    Options
	log     *session.Log
	out     *session.Output
	builder *build.Builder
	comp    *compiled.Session
	// workDone is set once a go.work beside the notebook was looked for
	// (before the first cell).
	workDone bool
	// evaluated counts the cells that ran without a build.
	evaluated int
	// resolver finds the packages cells use without importing them.
	resolver *autoimport.Resolver
}

var _ session.Runner = (*Runner)(nil)

// New prepares compiled cells; it fails when plugins cannot be built here
// (build.Unavailable says why), and cells are then interpreted.
func New(opts Options) (*Runner, error) {
	b, err := build.New(context.Background(), build.Options{CacheDir: opts.BuildCache})
	if err != nil {
		return nil, err
	}
	r := &Runner{opts: opts, log: opts.Log, out: opts.Output, builder: b}
	res := b.Resolver(opts.AutoImport)
	r.resolver = res
	r.comp = compiled.New(compiled.Options{Builder: b, AutoImport: opts.AutoImport, Symbols: opts.Symbols, NoEval: opts.AlwaysBuild,
		Resolve: func(name, src string) (string, error) {
			return res.ResolveIn(context.Background(), name, src)
		}})
	r.comp.Late = func(msg string) { r.out.Stderr(msg + "\n") }
	r.comp.Notes = func(autoImports, warnings, _ []string) {
		for _, p := range autoImports {
			r.out.Stderr(fmt.Sprintf("goaccel: added import %q\n", p))
		}
		for _, w := range warnings {
			r.out.Stderr("goaccel: " + w + "\n")
		}
	}
	compiled.SetLaunchName(opts.LaunchName)
	compiled.SetInput(r.input)
	// A new cell starts with no buffered input.
	opts.Cells.OnStart(func(*session.Cell) { gxrt.ResetStdin() })
	return r, nil
}

// Session is the compiled session; Builder builds its cells.
func (r *Runner) Session() *compiled.Session { return r.comp }

// Builder builds the session's cells and keeps its module.
func (r *Runner) Builder() *build.Builder { return r.builder }

// AutoImport resolves a package name cells use without importing it.
func (r *Runner) AutoImport(name string) string { return r.opts.AutoImport(name) }

// Evaluated counts the cells that ran without a build; NotEvaluated says
// why the last cell that was built could not be evaluated.
func (r *Runner) Evaluated() int { return r.evaluated }

// NotEvaluated says why the last built cell was not evaluated instead.
func (r *Runner) NotEvaluated() string { return r.comp.NotEvaluated() }

// Reset forgets every declaration and value (%reset).
func (r *Runner) Reset() error {
	r.comp.Reset()
	return nil
}

// Close releases the builder.
func (r *Runner) Close() error { return r.builder.Close() }

// progress reports what the toolchain does on the cell's stderr.
func (r *Runner) progress(msg string) { r.out.Stderr("goaccel: " + msg + "\n") }

// input answers a compiled cell's read of standard input: a line
// from the frontend (an input_request), io.EOF when no cell runs or the
// frontend gave none, gxrt.ErrInterrupted when the cell was interrupted
// while it waited, or the reason input cannot be requested (allow_stdin
// is false), which the read returns.
func (r *Runner) input() (string, error) {
	c := r.opts.Cells.Cell()
	if c == nil || !c.Running() {
		return "", io.EOF
	}
	line, err := c.AskStdin()
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

// Run runs the Go code of cell c as compiled Go.
func (r *Runner) Run(ctx context.Context, c *session.Cell, code string) (*session.Result, *frontend.Error) {
	if note := stillRunning(compiled.Jobs(), time.Now()); note != "" {
		c.IO.Stream("stderr", note)
	}
	r.applyGoWork(ctx)
	done := r.builder.Attend(ctx, r.progress)
	res, err := r.comp.Run(ctx, code, c.Count, r.progress)
	done()
	if res != nil {
		r.logBindings(res.Bindings, res.Imports, c.Count)
		if res.Evaluated {
			r.evaluated++
		}
	}
	r.opts.Flush()
	if perr := r.opts.GoPanics(c); perr != nil && err == nil {
		return nil, perr
	}
	var ce *check.Error
	if err != nil && errors.As(err, &ce) && ctx.Err() != nil {
		// Interrupted while the checker's imports were being fetched or
		// built.
		return nil, session.ErrInterrupted()
	}
	if err != nil {
		return nil, r.compiledError(err, code, c.Count)
	}
	if ctx.Err() != nil {
		return nil, session.ErrInterrupted()
	}
	if res.Kind == gen.NoResult || len(res.Values) == 0 {
		return nil, nil
	}
	return &session.Result{Values: res.Values, Multi: res.Kind == gen.MultiResult}, nil
}

// Evaluate evaluates a user expression (execute_request's
// user_expressions) against the compiled session. It runs as a cell that is
// only an expression, numbered 0: it binds nothing and leaves the cells'
// sources alone.
func (r *Runner) Evaluate(ctx context.Context, c *session.Cell, expr string) (*session.Result, *frontend.Error) {
	if strings.Contains(expr, "\n") {
		return nil, &frontend.Error{Name: "SyntaxError", Value: "a user expression must be one line: " + expr}
	}
	if _, err := parser.ParseExpr(expr); err != nil {
		return nil, &frontend.Error{Name: "SyntaxError", Value: "not a single expression: " + expr + ": " + err.Error()}
	}
	res, err := r.comp.Run(ctx, expr, 0, nil)
	r.opts.Flush()
	if err != nil {
		return nil, r.compiledError(err, expr, 0)
	}
	if res.Kind == gen.NoResult || len(res.Values) == 0 {
		return nil, nil
	}
	return &session.Result{Values: res.Values, Multi: res.Kind == gen.MultiResult}, nil
}

// logBindings keeps the declaration log in step with what compiled cells
// bound.
func (r *Runner) logBindings(bindings []check.Binding, imports []*check.Import, count int) {
	for _, im := range imports {
		src := "import " + strconv.Quote(im.Path)
		if im.Name != "" && im.Name != path.Base(im.Path) {
			src = "import " + im.Name + " " + strconv.Quote(im.Path)
		}
		r.log.AddImport(session.Declaration{Kind: session.KindImport, Name: im.Name, Source: src, Path: im.Path, Cell: count})
	}
	qual := r.qualifier()
	var decls []session.Declaration
	for _, b := range bindings {
		en := b.New
		d := session.Declaration{Name: en.Name, Cell: count}
		if en.Unit != nil {
			d.Source = en.Unit.Src
			d.SrcCell, d.Line, d.Col = en.Unit.Cell, en.Unit.Line, en.Unit.Col
		}
		switch en.Kind {
		case check.TypeEntry:
			d.Kind = session.KindType
		case check.FuncEntry:
			d.Kind = session.KindFunc
			d.Results = en.Obj.Type().(*types.Signature).Results().Len()
		case check.MethodEntry:
			d.Kind = session.KindMethod
			if en.Recv != nil {
				d.Name = en.Recv.Name + "." + en.Name
			}
			d.Results = en.Obj.Type().(*types.Signature).Results().Len()
		case check.ConstEntry:
			d.Kind = session.KindConst
			d.Names = []string{en.Name}
			if d.Source == "" {
				d.Source = "const " + en.Name + " " + types.TypeString(en.Obj.Type(), qual) + " = " + en.Obj.(*types.Const).Val().ExactString()
			}
		case check.VarEntry:
			d.Kind = session.KindVar
			d.Names = []string{en.Name}
			d.Source = "var " + en.Name + " " + types.TypeString(en.Obj.Type(), qual)
			d.FromStatement = true
		}
		decls = append(decls, d)
	}
	r.log.Add(decls...)
}

// qualifier names packages in type strings as the session imports them.
func (r *Runner) qualifier() types.Qualifier {
	byPath := map[string]string{}
	for name, path := range r.log.Imports() {
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

// Values are the session's variables with their values.
func (r *Runner) Values() []session.Var {
	var out []session.Var
	for _, v := range r.comp.Entries() {
		if !session.Hidden(v.Name) {
			out = append(out, session.Var{Name: v.Name, Type: v.Type, Value: v.Value})
		}
	}
	return out
}

// Vars are the session's variables that have storage, typed as a cell
// declares them: packages by the names cells import them under, and a
// package no cell imported under a name (_gxdN) that extra imports.
func (r *Runner) Vars(imports map[string]string) (vars []session.Var, extra []string) {
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
	comp := r.comp
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

// Value is the storage of the session variable name (addressable).
func (r *Runner) Value(name string) (reflect.Value, bool) { return r.comp.Value(name) }

// Declare runs src, declarations only, as cell n, and logs what it bound.
func (r *Runner) Declare(ctx context.Context, src string, n int) *frontend.Error {
	res, err := r.comp.Run(ctx, src, n, r.progress)
	if res != nil {
		r.logBindings(res.Bindings, res.Imports, n)
	}
	if err != nil {
		return r.compiledError(err, src, n)
	}
	return nil
}

// applyGoWork applies a go.work in the working directory before the first
// compiled cell (the kernel starts in the notebook's directory).
func (r *Runner) applyGoWork(ctx context.Context) {
	if r.workDone {
		return
	}
	r.workDone = true
	wd, err := os.Getwd()
	if err != nil {
		return
	}
	used, err := r.builder.GoWork(ctx, wd, r.progress)
	if err != nil {
		r.progress(fmt.Sprintf("the go.work in %s was not applied: %v", wd, err))
		return
	}
	if len(used) > 0 {
		r.progress("using " + strings.Join(used, ", ") + " (go.work beside the notebook; %use with no argument reloads them)")
	}
}

// importFailure turns a type-checker error that an import failed into the
// Builder's account of why (which module, and what to do), or returns nil.
func (r *Runner) importFailure(ce *check.Error, lines []string) *frontend.Error {
	if len(ce.Diags) == 0 {
		return nil
	}
	rest, ok := strings.CutPrefix(ce.Diags[0].Msg, "could not import ")
	if !ok {
		return nil
	}
	path, _, _ := strings.Cut(rest, " ")
	ie := r.builder.ImportProblem(path)
	if ie == nil {
		return nil
	}
	name := "ImportError"
	var conflict *build.ConflictError
	if errors.As(ie, &conflict) {
		name = "VersionConflict"
	}
	tb := []string{ce.Diags[0].Pos.String() + ": could not import " + path}
	if len(lines) > 1 {
		tb = append(tb, lines[1:]...)
	}
	tb = append(tb, strings.Split(ie.Error(), "\n")...)
	return &frontend.Error{Name: name, Value: ie.Error(), Traceback: tb}
}

// Goroutines describes the goroutines cells started that are still
// running (%goroutines).
func (r *Runner) Goroutines() string {
	gs := compiled.Goroutines()
	if len(gs) == 0 {
		return "no goroutine started by a cell is running\n"
	}
	var b strings.Builder
	for _, g := range gs {
		b.WriteString(goroutineHeader(g) + "\n")
	}
	return b.String()
}

// Jobs describes the interrupted cells whose goroutines did not all stop
// (%jobs): since when, and what each goroutine left is doing.
func (r *Runner) Jobs() string {
	jobs := compiled.Jobs()
	if len(jobs) == 0 {
		return "no interrupted cell is still running\n"
	}
	var b strings.Builder
	now := time.Now()
	for _, j := range jobs {
		fmt.Fprintf(&b, "%s, interrupted %s ago: %s still running\n", jobCell(j), now.Sub(j.Since).Round(100*time.Millisecond), plural(len(j.Goroutines), "goroutine"))
		for _, g := range j.Goroutines {
			b.WriteString("  " + goroutineHeader(g) + "\n")
		}
	}
	b.WriteString("(%jobs wait waits for them to stop)\n")
	return b.String()
}

// WaitJobs waits until the goroutines of every interrupted cell listed now
// have stopped, or ctx ends; say hears each cell's end.
func (r *Runner) WaitJobs(ctx context.Context, say func(string)) error {
	jobs := compiled.Jobs()
	if len(jobs) == 0 {
		say("no interrupted cell is still running\n")
		return nil
	}
	start := time.Now()
	for _, j := range jobs {
		say(fmt.Sprintf("waiting for %s (%s)…\n", jobCell(j), plural(len(j.Goroutines), "goroutine")))
		select {
		case <-j.Gone:
			say(fmt.Sprintf("%s stopped (waited %s)\n", jobCell(j), time.Since(start).Round(100*time.Millisecond)))
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// stillRunning is the note a cell starts with while goroutines of
// interrupted cells still run: fds 1 and 2 are the process's, so what they
// print lands under the cell that runs when they print it, and the note
// says so where it happens ("" when none runs).
func stillRunning(jobs []compiled.Job, now time.Time) string {
	if len(jobs) == 0 {
		return ""
	}
	var b strings.Builder
	for _, j := range jobs {
		fmt.Fprintf(&b, "note: %s, interrupted %s ago, still runs %s: what it prints until it stops appears under the running cell (%%jobs shows it, %%jobs wait waits for it)\n",
			jobCell(j), now.Sub(j.Since).Round(100*time.Millisecond), plural(len(j.Goroutines), "goroutine"))
	}
	return b.String()
}

func jobCell(j compiled.Job) string {
	if j.Cell > 0 {
		return fmt.Sprintf("cell[%d]", j.Cell)
	}
	return "a cell"
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// Resolver is what finds the packages cells use without importing them.
func (r *Runner) Resolver() *autoimport.Resolver { return r.resolver }

// Forget unbinds a name of the session (GoNB's %rm) and says what it was.
func (r *Runner) Forget(name string) (kind string, ok bool) {
	return r.comp.Checker().Forget(name)
}
