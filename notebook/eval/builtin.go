package eval

import (
	"go/ast"
	"go/types"
	"reflect"
)

// builtinCall compiles a call of len, cap, new, append, complex, real or
// imag.
func (c *compiler) builtinCall(call *ast.CallExpr, name string) val {
	rt := c.rtype(c.info.Types[call].Type)
	switch name {
	case "len", "cap":
		arg := call.Args[0]
		t := c.info.Types[arg].Type.Underlying()
		x := c.expr(arg)
		if p, ok := t.(*types.Pointer); ok {
			// The length of *p, which is not dereferenced.
			a, ok := p.Elem().Underlying().(*types.Array)
			if !ok {
				c.fail(call, "%s of %s", name, t)
			}
			n := reflect.ValueOf(int(a.Len()))
			return func() reflect.Value { x(); return n }
		}
		switch t := t.(type) {
		case *types.Slice, *types.Array, *types.Chan:
		case *types.Map:
			if name == "cap" {
				c.fail(call, "cap of a map")
			}
		case *types.Basic:
			if t.Info()&types.IsString == 0 || name == "cap" {
				c.fail(call, "%s of %s", name, t)
			}
		default:
			c.fail(call, "%s of %s", name, t)
		}
		if name == "len" {
			return func() reflect.Value { return reflect.ValueOf(x().Len()) }
		}
		return func() reflect.Value { return reflect.ValueOf(x().Cap()) }
	case "new":
		et := rt.Elem()
		c.newable(et)
		return func() reflect.Value { return reflect.New(et) }
	case "append":
		return c.appendCall(call, rt)
	case "complex":
		c.ordered(call.Args...)
		x, y := c.expr(call.Args[0]), c.expr(call.Args[1])
		return func() reflect.Value {
			xv, yv := x(), y()
			if rt.Kind() == reflect.Complex64 {
				return makeComplex(rt, complex128(complex(float32(xv.Float()), float32(yv.Float()))))
			}
			return makeComplex(rt, complex(xv.Float(), yv.Float()))
		}
	case "real", "imag":
		x := c.expr(call.Args[0])
		return func() reflect.Value {
			z := x().Complex() // exact for complex64 too
			if name == "real" {
				return makeFloat(rt, real(z))
			}
			return makeFloat(rt, imag(z))
		}
	}
	c.fail(call, "built-in %s is compiled", name)
	return nil
}

// appendCall compiles append(s, x...) and append(s, t...) (reflect's
// append grows slices with the runtime's growslice, as compiled append
// does).
func (c *compiler) appendCall(call *ast.CallExpr, rt reflect.Type) val {
	st := c.info.Types[call].Type
	c.ordered(call.Args...)
	s := c.exprTo(call.Args[0], st)
	if call.Ellipsis.IsValid() {
		if len(call.Args) != 2 || !types.Identical(c.info.Types[call.Args[1]].Type.Underlying(), st.Underlying()) {
			c.fail(call, "append of %s", c.info.Types[call.Args[1]].Type)
		}
		t := c.exprTo(call.Args[1], st)
		return func() reflect.Value {
			sv := s()
			return reflect.AppendSlice(sv, t())
		}
	}
	et := st.Underlying().(*types.Slice).Elem()
	var elems []val
	for _, a := range call.Args[1:] {
		elems = append(elems, c.exprTo(a, et))
	}
	return func() reflect.Value {
		sv := s()
		xs := make([]reflect.Value, len(elems))
		for i, e := range elems {
			xs[i] = e()
		}
		return reflect.Append(sv, xs...)
	}
}

// conversion compiles a conversion T(x).
func (c *compiler) conversion(call *ast.CallExpr) val {
	to := c.info.Types[call].Type
	rt := c.rtype(to)
	arg := call.Args[0]
	atv := c.info.Types[arg]
	if atv.IsNil() {
		z := reflect.Zero(rt)
		return func() reflect.Value { return z }
	}
	from := atv.Type
	x := c.expr(arg)
	fk := c.rtype(from).Kind()
	switch {
	case types.IsInterface(to):
		c.newable(rt)
		return func() reflect.Value { return toInterface(x(), rt) }
	case isNumeric(fk) && isNumeric(rt.Kind()):
		return func() reflect.Value { return convertNumeric(x(), rt) }
	case types.IsInterface(from):
		c.fail(call, "conversion of an interface")
	}
	fu, tu := from.Underlying(), to.Underlying()
	ok := types.IdenticalIgnoreTags(fu, tu)
	if pf, isPtr := fu.(*types.Pointer); isPtr {
		if pt, isPtr := tu.(*types.Pointer); isPtr {
			ok = types.IdenticalIgnoreTags(pf.Elem().Underlying(), pt.Elem().Underlying())
		}
	}
	if rt.Kind() == reflect.String && (isInteger(fk) || fk == reflect.Slice) || fk == reflect.String && rt.Kind() == reflect.Slice {
		ok = true // string(rune), string(bytes), []byte(s), []rune(s)...
	}
	if !ok || !c.rtype(from).ConvertibleTo(rt) {
		c.fail(call, "conversion from %s to %s", from, to)
	}
	return func() reflect.Value { return x().Convert(rt) }
}

// composite compiles a composite literal of a struct, array, slice or map
// type.
func (c *compiler) composite(e *ast.CompositeLit) val {
	t := c.info.Types[e].Type
	ptr := false
	if p, ok := t.Underlying().(*types.Pointer); ok && e.Type == nil {
		ptr, t = true, p.Elem() // an elided &T in a literal of *T elements
	}
	rt := c.rtype(t)
	switch t.Underlying().(type) {
	case *types.Struct, *types.Array:
		c.newable(rt) // made by reflect.New
	default:
		if ptr {
			c.newable(rt)
		}
	}
	var operands []ast.Expr
	for _, el := range e.Elts {
		if kv, ok := el.(*ast.KeyValueExpr); ok {
			if _, isMap := t.Underlying().(*types.Map); isMap {
				operands = append(operands, kv.Key)
			}
			operands = append(operands, kv.Value)
			continue
		}
		operands = append(operands, el)
	}
	c.ordered(operands...)
	var build func() reflect.Value
	switch u := t.Underlying().(type) {
	case *types.Struct:
		build = c.structLit(e, u, rt)
	case *types.Array:
		build = c.listLit(e, u.Elem(), rt, int(u.Len()), false)
	case *types.Slice:
		build = c.listLit(e, u.Elem(), rt, 0, true)
	case *types.Map:
		build = c.mapLit(e, u, rt)
	default:
		c.fail(e, "literal of %s", t)
	}
	if ptr {
		return func() reflect.Value { return build().Addr() }
	}
	return build
}

func (c *compiler) structLit(e *ast.CompositeLit, st *types.Struct, rt reflect.Type) val {
	type field struct {
		i int
		v val
	}
	var fields []field
	for i, el := range e.Elts {
		fi, value := i, el
		if kv, ok := el.(*ast.KeyValueExpr); ok {
			fi = -1
			key, _ := kv.Key.(*ast.Ident)
			for j := 0; key != nil && j < st.NumFields(); j++ {
				if st.Field(j).Name() == key.Name {
					fi = j
				}
			}
			if fi < 0 {
				c.fail(kv, "field key")
			}
			value = kv.Value
		}
		if rt.NumField() != st.NumFields() || rt.Field(fi).Name != st.Field(fi).Name() {
			c.fail(e, "struct %v does not match its run-time type", rt)
		}
		if !st.Field(fi).Exported() {
			c.newable(rt.Field(fi).Type) // unRO
		}
		fields = append(fields, field{fi, c.exprTo(value, st.Field(fi).Type())})
	}
	return func() reflect.Value {
		out := reflect.New(rt).Elem()
		for _, f := range fields {
			unRO(out.Field(f.i)).Set(f.v())
		}
		return out
	}
}

func (c *compiler) listLit(e *ast.CompositeLit, et types.Type, rt reflect.Type, n int, slice bool) val {
	type elem struct {
		i int
		v val
	}
	var elems []elem
	next := 0
	for _, el := range e.Elts {
		value := el
		if kv, ok := el.(*ast.KeyValueExpr); ok {
			k := c.info.Types[kv.Key].Value
			if k == nil {
				c.fail(kv, "index key")
			}
			i, ok := constantInt(k)
			if !ok {
				c.fail(kv, "index key")
			}
			next = i
			value = kv.Value
		}
		elems = append(elems, elem{next, c.exprTo(value, et)})
		next++
		if next > n {
			n = next
		}
	}
	return func() reflect.Value {
		var out reflect.Value
		if slice {
			out = reflect.MakeSlice(rt, n, n)
		} else {
			out = reflect.New(rt).Elem()
		}
		for _, el := range elems {
			out.Index(el.i).Set(el.v())
		}
		return out
	}
}

func (c *compiler) mapLit(e *ast.CompositeLit, mt *types.Map, rt reflect.Type) val {
	type entry struct{ k, v val }
	var entries []entry
	for _, el := range e.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			c.fail(el, "map element")
		}
		entries = append(entries, entry{c.exprTo(kv.Key, mt.Key()), c.exprTo(kv.Value, mt.Elem())})
	}
	p := c.p
	pos := e.Lbrace
	return func() reflect.Value {
		out := reflect.MakeMapWithSize(rt, len(entries))
		for _, en := range entries {
			k, v := en.k(), en.v()
			p.at(pos)
			out.SetMapIndex(k, v)
		}
		return out
	}
}
