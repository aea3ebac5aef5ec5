// Package compiled runs notebook cells as compiled Go: each cell is
// type-checked against the session (package check), turned into a package
// (package gen), built into a plugin (package build), loaded into this
// process, wired to the earlier cells (their variables' storage, the
// override hooks of redefined functions) and run; then what it bound is
// committed to the session. Simple cells (assignments, calls, a trailing
// expression) are evaluated without a build instead (package eval), and
// committed alike.
//
// It knows nothing of Jupyter: the compiled runner (package
// compiledrunner) turns its results and errors into messages.
package compiled

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"math"
	"path/filepath"
	"plugin"
	"reflect"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/goaccel/goaccel/notebook/build"
	"github.com/goaccel/goaccel/notebook/check"
	"github.com/goaccel/goaccel/notebook/eval"
	"github.com/goaccel/goaccel/notebook/gen"
	"github.com/goaccel/goaccel/notebook/gxrt"
	"github.com/goaccel/goaccel/notebook/shlib"
	"github.com/goaccel/goaccel/notebook/shlib/modreg"
)

// Options configure a Session.
type Options struct {
	// Builder builds the plugins.
	Builder *build.Builder
	// AutoImport resolves package names cells use without importing them.
	AutoImport func(name string) string
	// Resolve, when set, does it instead, with the cell's source (see
	// check.Config).
	Resolve func(name, src string) (string, error)
	// ID distinguishes this session's package paths from another's in the
	// same process (tests); "" is fine for one session per process.
	ID string
	// Symbols are the packages linked into the process that evaluated
	// cells call (package eval), by import path, in the form of yaegi's
	// symbol tables. They must be the real packages compiled cells link
	// against (not stand-ins with other behavior).
	Symbols map[string]map[string]reflect.Value
	// NoEval builds every cell, also those package eval could run.
	NoEval bool
	// NoInterruptChecks compiles cells without the interrupt checks at
	// function entries and loop iterations (to measure their cost; loops
	// of such cells cannot be interrupted).
	NoInterruptChecks bool
}

// Session is a notebook's compiled state. Run calls must not overlap.
type Session struct {
	opts   Options
	chk    *check.Session
	units  map[string]*unit      // loaded cell packages by import path
	byCell map[*check.Cell]*unit // the unit of each committed cell
	fields map[*types.Var]string // struct field → path of the package that declared it
	// structs: alias of an unnamed struct (gen's GXu_…) → the package that
	// exports it first.
	structs map[string]string
	// order is every checked cell that was built, oldest first (for
	// locating panics in their code).
	order []*check.Cell
	// evals are the programs of the committed cells that were evaluated
	// (run again when the cell is).
	evals map[*check.Cell]*eval.Program
	// lastNotEvaluated is why the last cell was not evaluated.
	lastNotEvaluated string
	// Late hears what goroutines of cells that already ended report: a
	// panic (with its stack) or os.Exit.
	Late func(msg string)
	// Notes hears what the check of a new cell has to tell the user, before
	// the cell runs (so that it shows above the cell's output): the imports
	// it added, its warnings, and why each earlier declaration it leaves
	// on its old definition was left (check.Cell.Kept).
	Notes func(autoImports, warnings, kept []string)

	// pending is the unit whose code is running, before it commits (see
	// Pending); guarded by pendingMu because the running code may ask from
	// any of its goroutines.
	pendingMu sync.Mutex
	pending   *unit
}

// unit is a loaded cell package.
type unit struct {
	path string
	syms map[string]any
	cell *check.Cell
	out  *gen.Output
	// reuse are the earlier variables whose storage the cell's own
	// declarations take over.
	reuse map[string]*check.Entry
}

// home is where a session entry lives at run time (check.Entry.Home).
type home struct {
	unit *unit
	// ptr points to a variable's storage (*T).
	ptr reflect.Value
	// fn is a function's value, hook its override hook (*func(...)).
	fn, hook reflect.Value
}

// New starts an empty session.
func New(opts Options) *Session {
	fset := token.NewFileSet()
	chk := check.NewSession(check.Config{
		Importer:   opts.Builder.Importer(fset),
		FileSet:    fset,
		GoVersion:  langVersion(),
		AutoImport: opts.AutoImport,
		Resolve:    opts.Resolve,
	})
	s := &Session{opts: opts, chk: chk, units: map[string]*unit{}, byCell: map[*check.Cell]*unit{}, fields: map[*types.Var]string{}, structs: map[string]string{}, evals: map[*check.Cell]*eval.Program{}}
	return s
}

// Checker returns the session's type-level state (for completion and
// inspection).
func (s *Session) Checker() *check.Session { return s.chk }

// Reset forgets every binding (loaded plugins stay loaded: Go cannot
// unload them).
func (s *Session) Reset() {
	s.chk.Reset()
	s.byCell = map[*check.Cell]*unit{}
	s.evals = map[*check.Cell]*eval.Program{}
}

// Result is what a cell left to show.
type Result struct {
	// Values are the trailing expression's values (Kind says how many).
	Values []any
	Kind   gen.ResultKind
	// Built reports that a plugin was built (not taken from the cache or
	// run again).
	Built bool
	// Evaluated reports that the cell ran without a build (package eval).
	Evaluated bool
	// Bindings and Imports are what the cell bound (set also when its code
	// failed part-way: what ran stays).
	Bindings []check.Binding
	Imports  []*check.Import
}

// BuildError is the toolchain rejecting code the checker accepted: a
// limit of goaccel's translation, reported with the compiler's words.
type BuildError struct {
	Err    error
	Source []byte // the generated package
}

func (e *BuildError) Error() string { return e.Err.Error() }
func (e *BuildError) Unwrap() error { return e.Err }

// Run checks, builds and runs cell n (or evaluates it without a build,
// see evaluate.go). Errors: *check.Error (Go rejects the
// cell), *BuildError, *Panic, *Exit, context errors (interrupted), or
// others (the toolchain failed).
func (s *Session) Run(ctx context.Context, src string, n int, progress func(string)) (*Result, error) {
	return s.run(ctx, src, n, progress, true)
}

// RunBuilt is Run that always builds the cell: its code runs as Go
// compiled it, never in the evaluator (%timeit times Go's code).
func (s *Session) RunBuilt(ctx context.Context, src string, n int, progress func(string)) (*Result, error) {
	return s.run(ctx, src, n, progress, false)
}

// Call runs fn as the code of cell n runs: in a goroutine of a run of its
// own, so that an interrupt stops the compiled code fn calls, and a panic
// or os.Exit there (or in a goroutine it starts) ends the call as it would
// end a cell.
func (s *Session) Call(ctx context.Context, n int, fn func()) error {
	r := newRun(s, n)
	defer r.end()
	return r.call(ctx, fn)
}

func (s *Session) run(ctx context.Context, src string, n int, progress func(string), evaluate bool) (*Result, error) {
	if c := s.chk.Rerun(src); c != nil {
		if u := s.byCell[c]; u != nil {
			return s.execute(ctx, u, n, false)
		}
		if p := s.evals[c]; p != nil && evaluate {
			return s.evaluate(ctx, c, p, n)
		}
	}
	c, err := s.chk.Check(src, n)
	if err != nil {
		return nil, err
	}
	if s.Notes != nil && (len(c.AutoImports) > 0 || len(c.Warnings) > 0) {
		s.Notes(c.AutoImports, c.Warnings, c.Kept)
	}
	if evaluate {
		if res, ok, err := s.tryEvaluate(ctx, c, n); ok {
			return res, err
		}
	}
	u, built, err := s.build(ctx, c, progress)
	if err != nil {
		return nil, err
	}
	if u.syms, err = load(built.Plugin, built.Shared, built.Inits); err != nil {
		return nil, err
	}
	registerHooks(u)
	s.order = append(s.order, c)
	s.units[u.path] = u
	return s.execute(ctx, u, n, !built.Cached)
}

// build generates the package of a checked cell and builds it (or finds it
// in the cache). The unit it returns is not loaded yet.
func (s *Session) build(ctx context.Context, c *check.Cell, progress func(string)) (*unit, *build.Built, error) {
	reuse := map[string]*check.Entry{}
	for _, h := range c.Hoisted {
		if old := s.chk.Lookup(h.Name); old != nil && old.Kind == check.VarEntry && h.Obj != nil && types.Identical(old.Obj.Type(), h.Obj.Type()) && old.Home != nil {
			reuse[h.Name] = old
		}
	}
	for _, d := range c.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok.String() != "var" {
			continue
		}
		for _, sp := range gd.Specs {
			for _, id := range sp.(*ast.ValueSpec).Names {
				obj := c.Info.Defs[id]
				if old := s.chk.Lookup(id.Name); obj != nil && old != nil && old.Kind == check.VarEntry && types.Identical(old.Obj.Type(), obj.Type()) && old.Home != nil {
					reuse[id.Name] = old
				}
			}
		}
	}
	in := gen.Input{Cell: c, Home: s.homePath, FieldHome: func(f *types.Var) string { return s.fields[f] },
		StructHome: func(alias string) string { return s.structs[alias] }, Reuse: reuse, NoChecks: s.opts.NoInterruptChecks}
	out, err := gen.Generate(in)
	if err != nil {
		return nil, nil, &BuildError{Err: fmt.Errorf("goaccel cannot translate this cell: %w", err)}
	}
	path := s.pathFor(out)
	built, err := s.opts.Builder.Build(ctx, build.Package{Path: path, Source: out.Source, Imports: out.Imports}, progress)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		var ce *build.CompileError
		if errors.As(err, &ce) {
			return nil, nil, &BuildError{Err: err, Source: out.Source}
		}
		return nil, nil, err
	}
	return &unit{path: path, cell: c, out: out, reuse: reuse}, built, nil
}

// Prebuild builds cells (numbered from 1) the way a fresh session running
// them would, into the build cache, without loading or running them: a
// process that then runs the same cells in a fresh session with a Builder
// of the same configuration (a launched worker) finds every plugin built.
// Each cell is committed at the type level only, for the next one to be
// checked against it.
func Prebuild(ctx context.Context, opts Options, cells []string) error {
	s := New(opts)
	for i, src := range cells {
		c, err := s.chk.Check(src, i+1)
		if err != nil {
			return err
		}
		u, _, err := s.build(ctx, c, nil)
		if err != nil {
			return err
		}
		s.units[u.path] = u
		s.commit(u, math.MaxInt) // every statement "ran"
	}
	return nil
}

// loadMu serializes plugin loading: a plugin's package registers its
// symbol table with gxrt when it is opened.
var loadMu sync.Mutex

// stalePackage matches the plugin package's complaint about a package
// whose build differs from the host's.
var stalePackage = regexp.MustCompile(`different version of package (\S+)`)

// load opens a cell plugin, after the shared libraries it links against
// and the initialization of their packages it reaches (inits, in order),
// and returns its symbol table.
func load(file string, shared, inits []string) (map[string]any, error) {
	loadMu.Lock()
	defer loadMu.Unlock()
	if len(shared) > 0 {
		if err := shlib.Load(shared...); err != nil {
			return nil, err
		}
		if err := shlib.Init(inits, build.InitSymbol); err != nil {
			return nil, err
		}
	}
	gxrt.TakeRegistered()
	if _, err := plugin.Open(file); err != nil {
		if m := stalePackage.FindStringSubmatch(err.Error()); m != nil && strings.HasPrefix(m[1], "goaccel.cells/") {
			return nil, fmt.Errorf("loading the compiled cell: the build of an earlier cell it uses (%s) in the cache differs from the one loaded; remove %s and restart the kernel: %w", m[1], filepath.Dir(filepath.Dir(filepath.Dir(file))), err)
		} else if m != nil {
			return nil, fmt.Errorf("loading the compiled cell: package %s in the source cells are compiled against (%s) is not the one this kernel was built from: the source changed after the kernel was built; rebuild it (make build) and restart the kernel: %w", m[1], build.SourceDir, err)
		}
		return nil, fmt.Errorf("loading the compiled cell: %w", err)
	}
	// The cell's code first in the runtime's lookups by address.
	_ = modreg.Promote()
	tables := gxrt.TakeRegistered()
	if len(tables) != 1 {
		return nil, fmt.Errorf("loading the compiled cell: %d symbol tables registered (want 1; was %s opened before?)", len(tables), file)
	}
	return tables[0], nil
}

// homePath is the import path of the package declaring an entry.
func (s *Session) homePath(e *check.Entry) string {
	if h, ok := e.Home.(*home); ok && h.unit != nil {
		return h.unit.path
	}
	return ""
}

// pathFor names a cell package: by its content (so that a new kernel
// running the same notebook finds it in the build cache), made unique in
// this process.
func (s *Session) pathFor(out *gen.Output) string {
	h := sha256.New()
	h.Write(out.Source)
	for _, imp := range out.Imports {
		h.Write([]byte{0})
		h.Write([]byte(imp))
	}
	sum := hex.EncodeToString(h.Sum(nil)[:10])
	base := "goaccel.cells/"
	if s.opts.ID != "" {
		base += s.opts.ID + "/"
	}
	path := base + "c" + sum
	for i := 1; s.units[path] != nil; i++ {
		path = base + "c" + sum + "_" + strconv.Itoa(i)
	}
	return path
}

// wire connects a loaded unit to the session: pointers to the variables of
// earlier cells it uses.
func (s *Session) wire(u *unit) error {
	for _, e := range u.out.Injected {
		h, ok := e.Home.(*home)
		if !ok || !h.ptr.IsValid() {
			return fmt.Errorf("variable %s has no storage", e.Name)
		}
		slot := reflect.ValueOf(u.syms["i:"+strconv.Itoa(e.ID)])
		if slot.Kind() != reflect.Pointer || slot.Elem().Type() != h.ptr.Type() {
			return fmt.Errorf("variable %s: injection point of type %v for storage %v", e.Name, slot.Type(), h.ptr.Type())
		}
		slot.Elem().Set(h.ptr)
	}
	return nil
}

// commit records the bindings of a unit that ran: homes, override hooks of
// functions redefined compatibly, the homes of struct fields.
func (s *Session) commit(u *unit, done int) []check.Binding {
	c := u.cell
	bindings := s.chk.Commit(c, func(h *check.Hoisted) bool { return h.Stmt < done })
	for _, b := range bindings {
		e := b.New
		h := &home{unit: u}
		switch e.Kind {
		case check.VarEntry:
			if old := u.out; old != nil {
				if p, ok := u.syms["v:"+e.Name]; ok {
					h.ptr = reflect.ValueOf(p)
				} else if b.Old != nil && b.Compatible {
					if oh, ok := b.Old.Home.(*home); ok {
						h.ptr = oh.ptr
					}
				}
			}
		case check.FuncEntry:
			if f, ok := u.syms["f:"+e.Name]; ok {
				h.fn = reflect.ValueOf(f)
				h.hook = reflect.ValueOf(u.syms["o:"+e.Name])
			}
			if b.Old != nil && b.Compatible && h.fn.IsValid() {
				redirect(b.Old, u, h.fn, nil)
			}
		}
		e.Home = h
	}
	for _, a := range u.out.StructAliases {
		if _, ok := s.structs[a]; !ok {
			s.structs[a] = u.path
		}
	}
	for _, obj := range c.Info.Defs {
		if v, ok := obj.(*types.Var); ok && v.IsField() {
			s.fields[v] = u.path
		}
	}
	s.byCell[c] = u
	return bindings
}

// execute runs a unit's initializer and statements.
func (s *Session) execute(ctx context.Context, u *unit, n int, built bool) (*Result, error) {
	if err := s.wire(u); err != nil {
		return nil, err
	}
	res := &Result{Kind: u.out.Result, Built: built}
	done, _ := u.syms["done"].(*int)
	if done != nil {
		*done = 0
	}
	initFn, _ := u.syms["init"].(func())
	runFn, _ := u.syms["run"].(func())
	r := newRun(s, n)
	defer r.end()
	s.setPending(u)
	defer s.setPending(nil)
	if h := runHook; h != nil {
		h(n)
	}
	// A cell whose package-level variables fail to initialize binds
	// nothing: its declarations never came into being, and the earlier
	// variables whose storage they took over keep their values.
	saved := saveReused(u)
	undoHooks := s.preBind(u)
	if err := r.call(ctx, initFn); err != nil {
		for _, sv := range saved {
			sv.ptr.Elem().Set(sv.val)
		}
		undoHooks()
		return nil, err
	}
	err := r.call(ctx, runFn)
	vals := r.values()
	k := 0
	if done != nil {
		k = *done
	}
	res.Bindings = s.commit(u, k)
	res.Imports = u.cell.Imports
	if err != nil {
		return res, err
	}
	res.Values = vals
	return res, nil
}

// preBind points the override hooks of the functions the unit redefines
// compatibly at the unit's definitions before any of its code runs (commit
// does it again, for good): earlier cells' code that the cell's statements
// call must reach the new definitions, as in a Go program, where every
// declaration exists before main. It returns how to undo that, for a cell
// that binds nothing.
func (s *Session) preBind(u *unit) (undo func()) {
	type set struct{ hook, old reflect.Value }
	var done []set
	for name, old := range s.chk.CompatibleFuncs(u.cell) {
		if f, ok := u.syms["f:"+name]; ok {
			redirect(old, u, reflect.ValueOf(f), func(hook, prev reflect.Value) { done = append(done, set{hook, prev}) })
		}
	}
	return func() {
		for i := len(done) - 1; i >= 0; i-- {
			setHook(done[i].hook, done[i].old)
		}
	}
}

// redirect makes fn, unit u's definition of a function, the one every
// earlier definition in old's chain calls: their override hooks point at
// fn, except u's own (a cell run again redefines its own functions), which
// is cleared, or fn would call itself. seen, when set, hears each hook's
// value before.
func redirect(old *check.Entry, u *unit, fn reflect.Value, seen func(hook, prev reflect.Value)) {
	for p := old; p != nil; p = p.Prev {
		oh, ok := p.Home.(*home)
		if !ok || !oh.hook.IsValid() || oh.hook.Elem().Type() != fn.Type() {
			continue
		}
		if seen != nil {
			seen(oh.hook, hookValue(oh.hook))
		}
		if oh.unit == u {
			setHook(oh.hook, reflect.Zero(fn.Type()))
		} else {
			setHook(oh.hook, fn)
		}
	}
}

type savedVar struct{ ptr, val reflect.Value }

// saveReused copies the values of the earlier variables whose storage the
// unit's declarations take over.
func saveReused(u *unit) []savedVar {
	var out []savedVar
	for _, e := range u.reuse {
		if h, ok := e.Home.(*home); ok && h.ptr.IsValid() {
			v := reflect.New(h.ptr.Elem().Type()).Elem()
			v.Set(h.ptr.Elem())
			out = append(out, savedVar{h.ptr, v})
		}
	}
	return out
}

// runHook, when set (by tests), hears that cell n was built and starts.
var runHook func(n int)

// Entries lists the session's variables with their current values, for
// %who and the variable explorer.
func (s *Session) Entries() []Var {
	var out []Var
	for _, e := range s.chk.Entries() {
		if e.Kind != check.VarEntry {
			continue
		}
		h, ok := e.Home.(*home)
		if !ok || !h.ptr.IsValid() {
			continue
		}
		out = append(out, Var{Name: e.Name, Type: types.TypeString(e.Obj.Type(), qualifier), Value: h.ptr.Elem()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Var is a session variable.
type Var struct {
	Name  string
	Type  string
	Value reflect.Value
}

func qualifier(p *types.Package) string {
	if p.Path() == "main" {
		return ""
	}
	return p.Name()
}

// Value returns the storage of the session variable name (addressable).
func (s *Session) Value(name string) (reflect.Value, bool) {
	e := s.chk.Lookup(name)
	if e == nil || e.Kind != check.VarEntry {
		return reflect.Value{}, false
	}
	h, ok := e.Home.(*home)
	if !ok || !h.ptr.IsValid() {
		return reflect.Value{}, false
	}
	return h.ptr.Elem(), true
}

// Func returns the current value of the session function name.
func (s *Session) Func(name string) (reflect.Value, bool) {
	e := s.chk.Lookup(name)
	if e == nil || e.Kind != check.FuncEntry {
		return reflect.Value{}, false
	}
	h, ok := e.Home.(*home)
	if !ok || !h.fn.IsValid() {
		return reflect.Value{}, false
	}
	return h.fn, true
}

// Pending returns the cell whose code is running, nil when none. What it
// declares is committed only when its code ends, but that code may already
// hand one of its functions to a launcher, which must then see the cell's
// declarations beside the session's.
func (s *Session) Pending() *check.Cell {
	s.pendingMu.Lock()
	defer s.pendingMu.Unlock()
	if s.pending == nil {
		return nil
	}
	return s.pending.cell
}

// PendingValue returns the storage of a variable that the running cell
// declares with storage of its own (addressable), before it is committed.
// A variable declared again with the type it had keeps the session's
// storage: Value finds it.
func (s *Session) PendingValue(name string) (reflect.Value, bool) {
	s.pendingMu.Lock()
	u := s.pending
	s.pendingMu.Unlock()
	if u == nil {
		return reflect.Value{}, false
	}
	p, ok := u.syms["v:"+name]
	if !ok {
		return reflect.Value{}, false
	}
	v := reflect.ValueOf(p)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return reflect.Value{}, false
	}
	return v.Elem(), true
}

func (s *Session) setPending(u *unit) {
	s.pendingMu.Lock()
	s.pending = u
	s.pendingMu.Unlock()
}

// langVersion is the language version of the running toolchain (go1.26).
func langVersion() string {
	v := strings.Fields(runtime.Version())[0]
	parts := strings.SplitN(strings.TrimPrefix(v, "go"), ".", 3)
	if len(parts) >= 2 {
		return "go" + parts[0] + "." + parts[1]
	}
	return ""
}
