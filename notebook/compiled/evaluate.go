package compiled

import (
	"context"
	"go/types"

	"reflect"
	"strings"

	"github.com/goaccel/goaccel/notebook/check"
	"github.com/goaccel/goaccel/notebook/eval"
	"github.com/goaccel/goaccel/notebook/gen"
)

// Cells the evaluator accepts (package eval) run without a build: the
// checked cell is evaluated in the kernel, in a run like a compiled cell's
// (interrupts, goroutine panics and os.Exit of the code it calls are
// handled alike), and committed to the checker like a compiled cell, its
// variables homed in the storage the evaluator gave them.

// env is the session as the evaluator reaches it.
type env struct{ s *Session }

func (v env) Lookup(name string) *check.Entry { return v.s.chk.Lookup(name) }

func (v env) Var(e *check.Entry) (reflect.Value, bool) {
	h, ok := e.Home.(*home)
	if !ok || !h.ptr.IsValid() {
		return reflect.Value{}, false
	}
	return h.ptr.Elem(), true
}

func (v env) Func(e *check.Entry) (reflect.Value, bool) {
	h, ok := e.Home.(*home)
	if !ok || !h.fn.IsValid() {
		return reflect.Value{}, false
	}
	return h.fn, true
}

func (v env) Type(e *check.Entry) (reflect.Type, bool) {
	h, ok := e.Home.(*home)
	if !ok || h.unit == nil {
		return nil, false
	}
	t, ok := h.unit.syms["t:"+e.Name]
	if !ok {
		return nil, false
	}
	rt := reflect.TypeOf(t)
	if rt.Kind() != reflect.Pointer {
		return nil, false
	}
	return rt.Elem(), true
}

func (v env) Package(path string) map[string]reflect.Value { return v.s.opts.Symbols[path] }

// tryEvaluate runs a checked cell with the evaluator when it accepts the
// cell; ok reports whether it did.
func (s *Session) tryEvaluate(ctx context.Context, c *check.Cell, n int) (res *Result, ok bool, err error) {
	if s.opts.NoEval {
		return nil, false, nil
	}
	if why := needsBuild(c); why != "" {
		s.lastNotEvaluated = why
		return nil, false, nil
	}
	p, perr := eval.Compile(c, env{s})
	if perr != nil {
		s.lastNotEvaluated = perr.Error()
		return nil, false, nil
	}
	s.lastNotEvaluated = ""
	s.order = append(s.order, c)
	res, err = s.evaluate(ctx, c, p, n)
	return res, true, err
}

// evaluate runs an evaluated cell's program and commits what it bound.
func (s *Session) evaluate(ctx context.Context, c *check.Cell, p *eval.Program, n int) (*Result, error) {
	res := &Result{Kind: gen.NoResult, Evaluated: true}
	if c.Trailing != nil {
		res.Kind = gen.TrailingResult(c, c.Trailing.X)
	}
	r := newRun(s, n)
	defer r.end()
	if h := runHook; h != nil {
		h(n)
	}
	var vals []any
	err := r.call(ctx, func() { vals = p.Run() })
	if pe, ok := err.(*Panic); ok && !pe.Goroutine {
		pe.Stack = evaluatedStack(pe.Stack, c.Fset.Position(p.Pos()).String())
	}
	if err != nil && !p.Initialized() {
		// Its variables never came into being (as for a compiled cell).
		return nil, err
	}
	done := p.Done()
	res.Bindings = s.chk.Commit(c, func(h *check.Hoisted) bool { return h.Stmt < done })
	for _, b := range res.Bindings {
		h := &home{}
		if b.New.Kind == check.VarEntry {
			h.ptr, _ = p.Storage(b.New.Name)
		}
		b.New.Home = h
	}
	s.evals[c] = p
	res.Imports = c.Imports
	if err != nil {
		return res, err
	}
	if res.Kind != gen.NoResult {
		res.Values = vals
	}
	return res, nil
}

// evaluatedStack turns the stack of a panic in evaluated code into the
// stack compiled code would have had: the frames of the code it called
// (the functions of cells and packages), then the cell's own at loc
// ("cell[3]:2:5"), in place of the evaluator's and reflect's frames.
func evaluatedStack(stack []byte, loc string) []byte {
	lines := strings.Split(strings.TrimRight(string(stack), "\n"), "\n")
	if len(lines) == 0 {
		return stack
	}
	out := []string{lines[0]}
	cut := -1
	for i := 1; i+1 < len(lines); i += 2 {
		if strings.HasPrefix(lines[i], "github.com/goaccel/goaccel/notebook/eval.") {
			cut = i
			break
		}
		out = append(out, lines[i], lines[i+1])
	}
	if cut < 0 {
		return stack
	}
	// The call machinery between the callee and the evaluator.
	for len(out) >= 3 && (strings.HasPrefix(out[len(out)-2], "reflect.") || strings.HasPrefix(out[len(out)-2], "runtime.call")) {
		out = out[:len(out)-2]
	}
	if i := strings.LastIndex(loc, ":"); i > 0 && strings.Count(loc, ":") >= 2 {
		loc = loc[:i] // the line: columns are Locate's business, as for compiled code
	}
	out = append(out, "main._gxrun()", "\t"+loc+" +0x0")
	for i := cut; i+1 < len(lines); i += 2 {
		if strings.Contains(lines[i], "notebook/compiled.") {
			out = append(out, lines[i:]...)
			break
		}
	}
	return []byte(strings.Join(out, "\n") + "\n")
}

// NotEvaluated says why the last cell checked was built rather than
// evaluated ("" when it was evaluated or never offered).
func (s *Session) NotEvaluated() string { return s.lastNotEvaluated }

// needsBuild says why a cell must be built even if the evaluator could run
// it ("" when nothing stands in the way): what gen rewrites for a notebook
// — standard input (gxrt's reader, fed by input requests; evaluated code
// would read the kernel's own fd 0) and package sync's blocking calls
// (interruptible only as rewritten) — is done right only by built code.
func needsBuild(c *check.Cell) string {
	if makesCellItab(c) {
		return "makes an interface value of a type declared in a cell"
	}
	for _, obj := range c.Info.Uses {
		if obj == nil || obj.Pkg() == nil {
			continue
		}
		switch p := obj.Pkg().Path(); {
		case p == "os" && obj.Name() == "Stdin",
			p == "fmt" && strings.HasPrefix(obj.Name(), "Scan"):
			return "reads standard input"
		case p == "sync" && (obj.Name() == "Wait" || obj.Name() == "Lock" || obj.Name() == "RLock"):
			return "waits in package sync (" + obj.Name() + ")"
		}
	}
	return ""
}

// makesCellItab reports whether a cell may put a value of a type declared in
// a cell into a non-empty interface. Evaluated, the runtime makes the pair's
// method table (itab) on the spot; built, the cell's plugin carries it, and
// every later plugin's compiled assertions and type switches on the pair
// compare against that one — not against one made at run time before any
// plugin had it (`sh.(sq)` would be false). Such cells are built.
func makesCellItab(c *check.Cell) bool {
	cellType, iface := false, false
	seen := map[types.Type]bool{}
	for _, tv := range c.Info.Types {
		t := tv.Type
		if t == nil {
			continue
		}
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
		if n, ok := types.Unalias(t).(*types.Named); ok && n.Obj().Pkg() == c.Pkg && !types.IsInterface(t) {
			cellType = true
		}
		iface = iface || holdsMethodInterface(t, seen)
		if cellType && iface {
			return true
		}
	}
	return false
}

// holdsMethodInterface reports whether a value of type t is, or holds in a
// parameter, element or field, an interface with methods: an evaluated
// call or literal would convert into it.
func holdsMethodInterface(t types.Type, seen map[types.Type]bool) bool {
	if t == nil || seen[t] {
		return false
	}
	seen[t] = true
	if types.IsInterface(t) {
		u, ok := t.Underlying().(*types.Interface)
		return ok && u.NumMethods() > 0
	}
	switch u := t.Underlying().(type) {
	case *types.Pointer:
		return holdsMethodInterface(u.Elem(), seen)
	case *types.Slice:
		return holdsMethodInterface(u.Elem(), seen)
	case *types.Array:
		return holdsMethodInterface(u.Elem(), seen)
	case *types.Map:
		return holdsMethodInterface(u.Key(), seen) || holdsMethodInterface(u.Elem(), seen)
	case *types.Chan:
		return holdsMethodInterface(u.Elem(), seen)
	case *types.Struct:
		for i := 0; i < u.NumFields(); i++ {
			if holdsMethodInterface(u.Field(i).Type(), seen) {
				return true
			}
		}
	case *types.Signature:
		for i := 0; i < u.Params().Len(); i++ {
			if holdsMethodInterface(u.Params().At(i).Type(), seen) {
				return true
			}
		}
	}
	return false
}
