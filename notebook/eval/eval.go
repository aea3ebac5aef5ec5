package eval

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/goaccel/goaccel/notebook/check"
)

// Env is how the evaluator reaches the session at run time.
type Env interface {
	// Lookup returns the current binding of a top-level name (nil for
	// none).
	Lookup(name string) *check.Entry
	// Var returns the storage of a session variable (addressable, of the
	// variable's type).
	Var(e *check.Entry) (reflect.Value, bool)
	// Func returns the value of a session function.
	Func(e *check.Entry) (reflect.Value, bool)
	// Type returns the run-time type of a session type.
	Type(e *check.Entry) (reflect.Type, bool)
	// Package returns the exported symbols of a package linked into the
	// kernel, by import path, in the form of yaegi's symbol tables:
	// functions, variables (addressable), types as (*T)(nil). Nil when
	// the package is not linked.
	Package(path string) map[string]reflect.Value
}

// NotEligible is Compile's answer for a cell the evaluator does not run.
type NotEligible struct {
	Pos    token.Position // where the first construct it rejects is (may be unset)
	Reason string
}

func (e *NotEligible) Error() string {
	if e.Pos.IsValid() {
		return fmt.Sprintf("%s: not evaluated: %s", e.Pos, e.Reason)
	}
	return "not evaluated: " + e.Reason
}

// Program is a cell ready to run. Run may be called again (the cell run
// once more); calls must not overlap.
type Program struct {
	cell     *check.Cell
	init     []func() // the package-level variables' initialization
	inited   atomic.Bool
	stmts    []func()
	stmtPos  []token.Pos
	trailing func() []reflect.Value
	storage  map[string]reflect.Value // hoisted variables: name → storage
	done     atomic.Int64
	pos      atomic.Int64 // the token.Pos of the operation running
}

// Run runs the cell's statements in order and returns the values of its
// trailing expression (none without one). A panic of the cell's code
// propagates, as it would in compiled code: Done and Pos then say how far
// it got.
func (p *Program) Run() []any {
	p.done.Store(0)
	p.inited.Store(false)
	for _, f := range p.init {
		f()
	}
	p.inited.Store(true)
	var out []reflect.Value
	for i, s := range p.stmts {
		p.pos.Store(int64(p.stmtPos[i]))
		if i == len(p.stmts)-1 && p.trailing != nil {
			out = p.trailing()
		} else {
			s()
		}
		p.done.Store(int64(i + 1))
	}
	vals := make([]any, len(out))
	for i, v := range out {
		if v.IsValid() {
			vals[i] = v.Interface()
		}
	}
	return vals
}

// Initialized reports that the last Run initialized the cell's
// package-level variables (a cell whose initialization panics binds
// nothing, as a compiled cell).
func (p *Program) Initialized() bool { return p.inited.Load() }

// Done is how many top-level statements completed in the last Run (the
// variables they define are bound).
func (p *Program) Done() int { return int(p.done.Load()) }

// Pos is the position of the operation that was running when Run stopped
// (where a panic happened).
func (p *Program) Pos() token.Pos { return token.Pos(p.pos.Load()) }

// Storage returns the storage (a pointer) of a variable the cell defines.
func (p *Program) Storage(name string) (reflect.Value, bool) {
	v, ok := p.storage[name]
	if !ok {
		return reflect.Value{}, false
	}
	return v.Addr(), true
}

// at records the position of the operation about to run.
func (p *Program) at(pos token.Pos) { p.pos.Store(int64(pos)) }

// compiler is one Compile in progress.
type compiler struct {
	cell     *check.Cell
	info     *types.Info
	env      Env
	p        *Program
	types    map[types.Type]reflect.Type
	pointers map[reflect.Type]bool // types whose pointer type is known
	hoisted  map[types.Object]reflect.Value
}

// failure stops a compilation: the cell is not eligible.
type failure struct {
	pos token.Pos
	msg string
}

func (c *compiler) fail(n ast.Node, format string, args ...any) {
	f := failure{msg: fmt.Sprintf(format, args...)}
	if n != nil {
		f.pos = n.Pos()
	}
	panic(f)
}

// Compile prepares a checked cell for evaluation. It returns a
// *NotEligible error when the cell has anything the evaluator does not
// run exactly as compiled Go would; nothing has run then.
func Compile(cell *check.Cell, env Env) (p *Program, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(failure)
			if !ok {
				f = failure{msg: fmt.Sprintf("internal: %v", r)}
			}
			ne := &NotEligible{Reason: f.msg}
			if f.pos.IsValid() {
				ne.Pos = cell.Fset.Position(f.pos)
			}
			p, err = nil, ne
		}
	}()
	c := &compiler{cell: cell, info: cell.Info, env: env, types: map[types.Type]reflect.Type{}, pointers: map[reflect.Type]bool{}, hoisted: map[types.Object]reflect.Value{}}
	c.p = &Program{cell: cell, storage: map[string]reflect.Value{}}
	c.checkCell()
	c.allocate()
	c.initialization()
	if cell.Body == nil {
		return c.p, nil
	}
	for _, st := range cell.Body.Body.List {
		c.p.stmtPos = append(c.p.stmtPos, st.Pos())
		if es, ok := st.(*ast.ExprStmt); ok && es == cell.Trailing {
			c.p.trailing = c.trailing(es.X)
			c.p.stmts = append(c.p.stmts, nil)
			continue
		}
		c.p.stmts = append(c.p.stmts, c.stmt(st))
	}
	return c.p, nil
}

// checkCell rejects cells with declarations other than variables': they
// need compiled homes.
func (c *compiler) checkCell() {
	cell := c.cell
	for _, d := range cell.Decls {
		if g, ok := d.(*ast.GenDecl); !ok || g.Tok != token.VAR {
			c.fail(d, "declarations are compiled")
		}
	}
	switch {
	case cell.Body == nil && len(cell.Decls) == 0:
		c.fail(nil, "nothing to run")
	case len(cell.Rehomed) > 0:
		c.fail(nil, "the cell recompiles earlier declarations")
	case cell.Main:
		c.fail(nil, "func main")
	}
	for _, d := range cell.File.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
			c.fail(g, "constants are compiled")
		}
	}
}

// allocate gives the variables the cell defines (by statements and by
// declarations) their storage: that of the variable of the same name and
// type it declares again (as compiled cells reuse it), or new storage.
func (c *compiler) allocate() {
	vars := map[string]*types.Var{}
	var names []string
	for _, h := range c.cell.Hoisted {
		if h.Obj == nil {
			c.fail(nil, "variable %s has no type", h.Name)
		}
		vars[h.Name] = h.Obj
		names = append(names, h.Name)
	}
	for _, d := range c.cell.Decls {
		for _, sp := range d.(*ast.GenDecl).Specs {
			for _, id := range sp.(*ast.ValueSpec).Names {
				if v, ok := c.info.Defs[id].(*types.Var); ok && id.Name != "_" {
					vars[id.Name] = v
					names = append(names, id.Name)
				}
			}
		}
	}
	for _, name := range names {
		obj := vars[name]
		var v reflect.Value
		if old := c.env.Lookup(name); old != nil && old.Kind == check.VarEntry && types.Identical(old.Obj.Type(), obj.Type()) {
			v, _ = c.env.Var(old)
		}
		rt := c.rtype(obj.Type())
		c.newable(rt)
		if !v.IsValid() {
			v = reflect.New(rt).Elem()
		} else if v.Type() != rt {
			c.fail(nil, "variable %s: storage of type %v for %v", name, v.Type(), rt)
		}
		c.hoisted[obj] = v
		c.p.storage[name] = v
	}
}

// initialization compiles what compiled cells do before the statements:
// the package-level variables initialized in Go's order (go/types'
// InitOrder), then those without a value set to their zero value (also
// when they keep an earlier variable's storage).
func (c *compiler) initialization() {
	for _, ini := range c.info.InitOrder {
		if len(ini.Lhs) == 1 {
			lhs := ini.Lhs[0]
			if lhs.Name() == "_" {
				v := c.discard(ini.Rhs)
				c.p.init = append(c.p.init, func() { v() })
				continue
			}
			v, dst := c.exprTo(ini.Rhs, lhs.Type()), c.varRef(ini.Rhs, lhs)
			c.p.init = append(c.p.init, func() { dst().Set(v()) })
			continue
		}
		call, ok := ast.Unparen(ini.Rhs).(*ast.CallExpr)
		if !ok {
			c.fail(ini.Rhs, "comma-ok initialization")
		}
		f := c.callMulti(call)
		tup := c.info.Types[call].Type.(*types.Tuple)
		stores := make([]func(reflect.Value), len(ini.Lhs))
		for i, lhs := range ini.Lhs {
			if lhs.Name() == "_" {
				continue
			}
			conv, dst := c.assignConv(call, tup.At(i).Type(), lhs.Type()), c.varRef(call, lhs)
			stores[i] = func(x reflect.Value) {
				if conv != nil {
					x = conv(x)
				}
				dst().Set(x)
			}
		}
		c.p.init = append(c.p.init, func() {
			for i, x := range f() {
				if stores[i] != nil {
					stores[i](x)
				}
			}
		})
	}
	for _, d := range c.cell.Decls {
		for _, sp := range d.(*ast.GenDecl).Specs {
			vs := sp.(*ast.ValueSpec)
			if len(vs.Values) > 0 {
				continue
			}
			for _, id := range vs.Names {
				if v, ok := c.info.Defs[id].(*types.Var); ok && id.Name != "_" {
					dst, zero := c.hoisted[v], reflect.Zero(c.rtype(v.Type()))
					c.p.init = append(c.p.init, func() { dst.Set(zero) })
				}
			}
		}
	}
}

// stmt compiles a statement.
func (c *compiler) stmt(s ast.Stmt) func() {
	switch s := s.(type) {
	case *ast.ExprStmt:
		call, ok := ast.Unparen(s.X).(*ast.CallExpr)
		if !ok {
			c.fail(s, "expression statement")
		}
		f := c.callMulti(call)
		return func() { f() }
	case *ast.AssignStmt:
		return c.assign(s)
	case *ast.IncDecStmt:
		op := token.ADD
		if s.Tok == token.DEC {
			op = token.SUB
		}
		return c.opAssign(s, s.X, op, nil)
	case *ast.EmptyStmt:
		return func() {}
	case *ast.BlockStmt:
		list := make([]func(), len(s.List))
		for i, st := range s.List {
			list[i] = c.stmt(st)
		}
		return func() {
			for _, f := range list {
				f()
			}
		}
	}
	c.fail(s, "%T statements are compiled", s)
	return nil
}

// trailing compiles the cell's result expression.
func (c *compiler) trailing(x ast.Expr) func() []reflect.Value {
	tv := c.info.Types[x]
	if call, ok := ast.Unparen(x).(*ast.CallExpr); ok && !tv.IsType() && !c.info.Types[call.Fun].IsType() && c.builtin(call) == "" {
		return c.callMulti(call)
	}
	if tv.IsNil() {
		return func() []reflect.Value { return []reflect.Value{{}} }
	}
	if !tv.IsValue() {
		c.fail(x, "the result is not a value")
	}
	if tv.Value != nil && isUntyped(tv.Type) {
		v := c.constant(x, tv.Value, c.rtype(tv.Type))
		return func() []reflect.Value { return []reflect.Value{v} }
	}
	f := c.expr(x)
	return func() []reflect.Value { return []reflect.Value{f()} }
}

func isUntyped(t types.Type) bool {
	b, ok := t.(*types.Basic)
	return ok && b.Info()&types.IsUntyped != 0
}

// fusesFMA reports whether the compiler fuses x*y + z into one
// fused multiply-add on this machine (the evaluator rounds twice, so such
// expressions are compiled there).
var fusesFMA = sync.OnceValue(func() bool {
	switch runtime.GOARCH {
	case "arm64", "ppc64", "ppc64le", "s390x", "riscv64", "loong64":
		return true
	case "amd64":
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "GOAMD64" {
					return s.Value >= "v3"
				}
			}
		}
	}
	return false
})

// unRO makes a value read through an unexported field usable: the cell is
// package main code, which may use the unexported fields of main's types.
func unRO(v reflect.Value) reflect.Value {
	if v.CanInterface() {
		return v
	}
	if v.CanAddr() {
		return reflect.NewAt(v.Type(), unsafePointer(v)).Elem()
	}
	panic("eval: read-only value that is not addressable")
}

// describe names a node for reasons.
func describe(n ast.Node) string {
	return strings.TrimPrefix(fmt.Sprintf("%T", n), "*ast.")
}
