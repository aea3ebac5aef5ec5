package eval

import (
	"go/ast"
	"go/types"
	"reflect"
	"strings"
)

// compiledOnly are the functions cells do not call directly: compiled
// cells reach them through goaccel's runtime (ending the cell rather than
// the kernel, naming launched functions), or they would end the
// evaluator's goroutine.
var compiledOnly = map[string]map[string]bool{
	"os":      {"Exit": true},
	"syscall": {"Exit": true},
	"log":     {"Fatal": true, "Fatalf": true, "Fatalln": true},
	"flag": {"Parse": true, "Bool": true, "BoolVar": true, "Int": true, "IntVar": true, "Int64": true, "Int64Var": true,
		"Uint": true, "UintVar": true, "Uint64": true, "Uint64Var": true, "String": true, "StringVar": true,
		"Float64": true, "Float64Var": true, "Duration": true, "DurationVar": true, "Func": true, "BoolFunc": true,
		"TextVar": true, "Var": true},
	"runtime":                                  {"Goexit": true},
	"github.com/goaccel/goaccel/launcher":      {"NotebookLauncher": true, "NotebookLauncherContext": true},
	"github.com/goaccel/goaccel/debuglauncher": {"DebugLauncher": true, "DebugLauncherContext": true},
}

// builtin returns the name of the built-in function a call calls ("" for
// none).
func (c *compiler) builtin(call *ast.CallExpr) string {
	if id, ok := ast.Unparen(call.Fun).(*ast.Ident); ok {
		if b, ok := c.info.Uses[id].(*types.Builtin); ok {
			return b.Name()
		}
	}
	return ""
}

// callValue compiles a call used as a single value: a conversion, a
// built-in function, or a function returning one result.
func (c *compiler) callValue(call *ast.CallExpr) val {
	if c.info.Types[call.Fun].IsType() {
		return c.conversion(call)
	}
	if b := c.builtin(call); b != "" {
		return c.builtinCall(call, b)
	}
	f := c.callMulti(call)
	return func() reflect.Value { return f()[0] }
}

// callMulti compiles a call of a function, with all its results.
func (c *compiler) callMulti(call *ast.CallExpr) func() []reflect.Value {
	if c.info.Types[call.Fun].IsType() || c.builtin(call) != "" {
		if c.builtin(call) != "" && c.info.Types[call].IsVoid() {
			c.fail(call, "built-in %s", c.builtin(call))
		}
		v := c.callValue(call)
		return func() []reflect.Value { return []reflect.Value{v()} }
	}
	sig, ok := c.info.Types[call.Fun].Type.Underlying().(*types.Signature)
	if !ok || sig.TypeParams().Len() > 0 {
		c.fail(call, "call of %s", c.info.Types[call.Fun].Type)
	}
	operands := append([]ast.Expr{call.Fun}, call.Args...)
	if c.static(call.Fun) {
		operands = operands[1:]
	}
	c.ordered(operands...)
	fn, check := c.callee(call.Fun)
	args := c.args(call, sig)
	p, pos := c.p, call.Lparen
	variadic := sig.Variadic()
	return func() []reflect.Value {
		f := fn()
		a := args()
		p.at(pos)
		if check && f.IsNil() {
			nilPointer()
		}
		if variadic {
			return f.CallSlice(a)
		}
		return f.Call(a)
	}
}

// static reports a callee that is a declared function (no operand to
// evaluate).
func (c *compiler) static(fun ast.Expr) bool {
	switch f := ast.Unparen(fun).(type) {
	case *ast.Ident:
		_, ok := c.info.Uses[f].(*types.Func)
		return ok
	case *ast.SelectorExpr:
		if c.info.Selections[f] != nil {
			return false
		}
		_, ok := c.info.Uses[f.Sel].(*types.Func)
		return ok
	}
	return false
}

// callee compiles the function a call calls; check reports a function
// value that may be nil.
func (c *compiler) callee(fun ast.Expr) (f val, check bool) {
	fun = ast.Unparen(fun)
	switch x := fun.(type) {
	case *ast.Ident:
		if _, ok := c.info.Instances[x]; ok {
			c.fail(x, "generic function %s", x.Name)
		}
		if o, ok := c.info.Uses[x].(*types.Func); ok {
			v := c.funcValue(x, o)
			return func() reflect.Value { return v }, false
		}
	case *ast.SelectorExpr:
		if _, ok := c.info.Instances[x.Sel]; ok {
			c.fail(x, "generic function %s", x.Sel.Name)
		}
		if sel := c.info.Selections[x]; sel != nil && sel.Kind() == types.MethodVal {
			return c.method(x, sel), false
		} else if sel == nil {
			if o, ok := c.info.Uses[x.Sel].(*types.Func); ok {
				v := c.funcValue(x, o)
				return func() reflect.Value { return v }, false
			}
		}
	case *ast.IndexListExpr:
		c.fail(x, "generic function")
	case *ast.IndexExpr:
		if _, ok := c.info.Types[x.X].Type.(*types.Signature); ok {
			c.fail(x, "generic function")
		}
	}
	return c.expr(fun), true
}

// funcValue finds a declared function: the session's or a linked
// package's.
func (c *compiler) funcValue(n ast.Node, o *types.Func) reflect.Value {
	if o.Pkg() == nil {
		c.fail(n, "function %s", o.Name())
	}
	var v reflect.Value
	if o.Pkg() == c.cell.Pkg {
		e := c.cell.EntryOf(o)
		if e == nil {
			c.fail(n, "%s is not a session function", o.Name())
		}
		var ok bool
		if v, ok = c.env.Func(e); !ok {
			c.fail(n, "function %s has no compiled value", o.Name())
		}
	} else {
		path := o.Pkg().Path()
		if compiledOnly[path][o.Name()] {
			c.fail(n, "%s.%s is called by compiled cells only", path, o.Name())
		}
		var ok bool
		if v, ok = c.env.Package(path)[o.Name()]; !ok {
			c.fail(n, "%s.%s is not linked into the kernel", path, o.Name())
		}
		if path == "time" && o.Name() == "Sleep" && v.Type() == reflect.TypeOf(sleep) {
			v = reflect.ValueOf(sleep) // interruptible
		}
	}
	if v.Kind() != reflect.Func || v.Type() != c.rtype(o.Type()) {
		c.fail(n, "%s: the linked function has type %v", o.Name(), v.Type())
	}
	return v
}

// method compiles a method selection x.M bound to its receiver (the
// implicit field selections, dereferences and address-taking included).
func (c *compiler) method(x *ast.SelectorExpr, sel *types.Selection) val {
	m := sel.Obj().(*types.Func)
	if !m.Exported() {
		c.fail(x, "unexported method %s", m.Name())
	}
	sig := m.Type().(*types.Signature)
	if sig.TypeParams().Len() > 0 || sig.RecvTypeParams().Len() > 0 {
		c.fail(x, "generic method %s", m.Name())
	}
	if m.Pkg() != nil && m.Pkg().Path() == "log" && strings.HasPrefix(m.Name(), "Fatal") {
		c.fail(x, "log's Fatal methods are called by compiled cells only")
	}
	path := sel.Index()
	recv, t := c.walk(c.expr(x.X), c.info.Types[x.X].Type, path[:len(path)-1], x.Sel.Pos())
	_, ptrRecv := types.Unalias(sig.Recv().Type()).(*types.Pointer)
	ptr, isPtr := t.Underlying().(*types.Pointer)
	holder := t
	var adjust func(reflect.Value) reflect.Value
	p, pos := c.p, x.Sel.Pos()
	nilCheck := func(v reflect.Value) reflect.Value {
		if v.IsNil() {
			p.at(pos)
			nilPointer()
		}
		return v
	}
	switch {
	case types.IsInterface(t):
		adjust = nilCheck
	case ptrRecv && !isPtr:
		holder = types.NewPointer(t)
		c.newable(c.rtype(t))
		adjust = func(v reflect.Value) reflect.Value {
			if !v.CanAddr() {
				panic("eval: method with a pointer receiver on an unaddressable value")
			}
			return v.Addr()
		}
	case !ptrRecv && isPtr:
		holder = ptr.Elem()
		adjust = func(v reflect.Value) reflect.Value { return nilCheck(v).Elem() }
	}
	hrt := c.rtype(holder)
	mt, ok := hrt.MethodByName(m.Name())
	if !ok {
		c.fail(x, "%v has no method %s at run time", hrt, m.Name())
	}
	ft := mt.Type
	if hrt.Kind() != reflect.Interface {
		in := make([]reflect.Type, ft.NumIn()-1)
		for i := range in {
			in[i] = ft.In(i + 1)
		}
		out := make([]reflect.Type, ft.NumOut())
		for i := range out {
			out[i] = ft.Out(i)
		}
		ft = reflect.FuncOf(in, out, ft.IsVariadic())
	}
	if want := c.rtype(types.NewSignatureType(nil, nil, nil, sig.Params(), sig.Results(), sig.Variadic())); ft != want {
		c.fail(x, "method %s has type %v at run time, %v in the cell", m.Name(), ft, want)
	}
	idx := mt.Index
	return func() reflect.Value {
		v := recv()
		if adjust != nil {
			v = adjust(v)
		}
		return v.Method(idx)
	}
}

// args compiles a call's arguments, converted to the parameters' types;
// the variadic ones are packed into their slice as Go packs them (nil
// when there are none).
func (c *compiler) args(call *ast.CallExpr, sig *types.Signature) func() []reflect.Value {
	params := sig.Params()
	n := params.Len()
	variadic := sig.Variadic()
	paramType := func(i int) types.Type {
		if variadic && i >= n-1 && !call.Ellipsis.IsValid() {
			return params.At(n - 1).Type().(*types.Slice).Elem()
		}
		return params.At(i).Type()
	}
	var vals []val
	if len(call.Args) == 1 {
		if tup, ok := c.info.Types[call.Args[0]].Type.(*types.Tuple); ok {
			// f(g()): g's results are f's arguments.
			inner, ok := ast.Unparen(call.Args[0]).(*ast.CallExpr)
			if !ok {
				c.fail(call, "multi-value argument")
			}
			g := c.callMulti(inner)
			convs := make([]func(reflect.Value) reflect.Value, tup.Len())
			for i := range convs {
				convs[i] = c.assignConv(call, tup.At(i).Type(), paramType(i))
			}
			results := func() []reflect.Value {
				vs := g()
				for i, conv := range convs {
					if conv != nil {
						vs[i] = conv(vs[i])
					}
				}
				return vs
			}
			return c.pack(results, n, variadic && !call.Ellipsis.IsValid(), params)
		}
	}
	for i, a := range call.Args {
		vals = append(vals, c.exprTo(a, paramType(i)))
	}
	all := func() []reflect.Value {
		out := make([]reflect.Value, len(vals))
		for i, v := range vals {
			out[i] = v()
		}
		return out
	}
	return c.pack(all, n, variadic && !call.Ellipsis.IsValid(), params)
}

// pack turns argument values into n parameter values, the variadic ones
// in a slice.
func (c *compiler) pack(args func() []reflect.Value, n int, pack bool, params *types.Tuple) func() []reflect.Value {
	if !pack {
		return args
	}
	st := c.rtype(params.At(n - 1).Type())
	nilSlice := reflect.Zero(st)
	return func() []reflect.Value {
		vs := args()
		out := append(vs[:0:0], vs[:n-1]...)
		extra := vs[n-1:]
		if len(extra) == 0 {
			return append(out, nilSlice)
		}
		s := reflect.MakeSlice(st, len(extra), len(extra))
		for i, v := range extra {
			s.Index(i).Set(v)
		}
		return append(out, s)
	}
}
