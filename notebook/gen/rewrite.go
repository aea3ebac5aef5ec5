package gen

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"github.com/goaccel/goaccel/notebook/check"
	"github.com/goaccel/goaccel/notebook/gxrt"
)

// exits are the functions that end a Go program, by import path and name,
// and what cells call instead.
var exits = map[string]map[string]string{
	"os":      {"Exit": "_gxrt.Exit"},
	"syscall": {"Exit": "_gxrt.Exit", "Exec": "_gxrt.Exec"},
	"log":     {"Fatal": "_gxrt.LogFatal", "Fatalf": "_gxrt.LogFatalf", "Fatalln": "_gxrt.LogFatalln"},
	"flag":    {"Parse": "_gxrt.FlagParse"},
	// A finalizer's panic ends a Go program from the runtime's goroutine,
	// out of any cell's reach (gxrt/finalizer.go).
	"runtime": {"SetFinalizer": "_gxrt.SetFinalizer", "AddCleanup": "_gxrt.AddCleanup"},
}

func init() {
	// Flags cells define replace earlier definitions of the same name
	// (gxrt/flags.go).
	for name, f := range gxrt.FlagDefiners {
		exits["flag"][name] = "_gxrt." + f
	}
}

// launchers are the functions whose function argument is launched on
// workers, by import path and name, with the argument's index.
var launchers = map[string]map[string]int{
	"github.com/goaccel/goaccel/launcher":      {"NotebookLauncher": 0, "NotebookLauncherContext": 1},
	"github.com/goaccel/goaccel/debuglauncher": {"DebugLauncher": 0, "DebugLauncherContext": 1},
}

// rewrite records the edits that turn the cell's code into the package's.
func (g *gen) rewrite() {
	c := g.c
	for _, d := range c.File.Decls {
		if g.hoistDecls[d] {
			continue
		}
		if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.IMPORT {
			continue
		}
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == check.BodyName {
			continue
		}
		g.walk(d)
	}
	if c.Body != nil {
		for _, st := range c.Body.Body.List {
			g.topLevelDefine(st)
			g.walk(st)
		}
	}
}

// topLevelDefine turns `x := v` at top level into `x = v` (x is hoisted).
func (g *gen) topLevelDefine(st ast.Stmt) {
	for {
		l, ok := st.(*ast.LabeledStmt)
		if !ok {
			break
		}
		st = l.Stmt
	}
	as, ok := st.(*ast.AssignStmt)
	if !ok || as.Tok != token.ASSIGN {
		return
	}
	tf := g.c.Fset.File(as.TokPos)
	if tf == nil {
		return
	}
	text := g.c.Text(tf)
	off := tf.Offset(as.TokPos)
	if off+2 <= len(text) && text[off:off+2] == ":=" {
		g.ed.add(as.TokPos, as.TokPos+2, func() string { return "=" })
	}
}

// walk records the edits inside n.
func (g *gen) walk(root ast.Node) {
	var stack []ast.Node
	ast.Inspect(root, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return false
		}
		var parent ast.Node
		if len(stack) > 0 {
			parent = stack[len(stack)-1]
		}
		stack = append(stack, n)
		switch n := n.(type) {
		case *ast.Ident:
			g.ident(n, parent)
		case *ast.SelectorExpr:
			g.selector(n, stack)
		case *ast.CompositeLit:
			g.compositeLit(n, parent)
		case *ast.StructType:
			if g.adoptedStructType(n) {
				stack = stack[:len(stack)-1] // no children, no nil call
				return false
			}
		case *ast.CallExpr:
			g.call(n)
		case *ast.GoStmt:
			g.goStmt(n)
		case *ast.DeferStmt:
			g.deferStmt(n)
		case *ast.FuncDecl:
			g.funcDecl(n)
		case *ast.FuncLit:
			g.checkAt(n.Body, n.Body)
		case *ast.ForStmt:
			g.checkAt(n.Body, g.enclosingBody(stack))
		case *ast.RangeStmt:
			g.rangeChan(n)
			g.checkAt(n.Body, g.enclosingBody(stack))
		case *ast.UnaryExpr:
			g.recv(n)
		case *ast.SendStmt:
			g.send(n)
		case *ast.SelectStmt:
			g.selectStmt(n, stack)
		}
		return true
	})
}

// sourceText is the cell's text of a node.
func (g *gen) sourceText(n ast.Node) string {
	tf := g.c.Fset.File(n.Pos())
	if tf == nil {
		return ""
	}
	text := g.c.Text(tf)
	a, b := tf.Offset(n.Pos()), tf.Offset(n.End())
	if a < 0 || b > len(text) || a > b {
		return ""
	}
	return text[a:b]
}

// ident handles a name: session bindings, renamed methods and exported
// names, variables reached through pointers.
func (g *gen) ident(id *ast.Ident, parent ast.Node) {
	c := g.c
	if g.deferred[id] {
		return // deferStmt named the function
	}
	obj := c.Info.Uses[id]
	def := false
	if obj == nil {
		obj = c.Info.Defs[id]
		def = true
	}
	if obj == nil {
		g.keepName(id)
		return
	}
	if b, ok := obj.(*types.Builtin); ok && b.Name() == "new" && g.sourceText(id) != "new" {
		// The zero value check gives a var statement (x = *new(T), at
		// x's position): varStatement writes it.
		return
	}
	if sel, ok := parent.(*ast.SelectorExpr); ok && sel.Sel == id {
		// A selected name: only methods declared in cells are renamed.
		if fn, ok := obj.(*types.Func); ok && fn.Type().(*types.Signature).Recv() != nil {
			if n := g.methodName(fn); n != id.Name {
				g.ed.replaceText(id, n)
			}
		}
		return
	}
	if obj.Pkg() != nil && obj.Pkg() != c.Pkg {
		if _, ok := obj.(*types.PkgName); !ok && !def {
			g.usedDot(obj.Pkg().Path())
		}
		return
	}
	if e := c.EntryOf(obj); e != nil {
		switch e.Kind {
		case check.VarEntry:
			g.ed.replaceText(id, g.injectedVar(e))
			return
		case check.FuncEntry:
			if call, ok := parent.(*ast.CallExpr); (!ok || call.Fun != id) && g.funcValue(id, e) {
				return
			}
			// The wrapper is a function of this package: an exported name
			// would make it a plugin export (see the package doc).
			name := g.ownName(id.Name)
			g.useFunc(name, e)
			if name != id.Name {
				g.ed.replaceText(id, name)
				return
			}
		case check.TypeEntry:
			g.typeAlias(id.Name, e)
		case check.ConstEntry:
			g.useConst(id.Name, e)
		}
		g.keepName(id)
		return
	}
	switch o := obj.(type) {
	case *types.Var:
		if o.IsField() || !packageLevel(o) {
			g.keepName(id)
			return
		}
		if ref := g.varRef(o); ref != id.Name || g.sourceText(id) != id.Name {
			g.ed.replaceText(id, ref)
		}
	case *types.Func:
		sig := o.Type().(*types.Signature)
		switch {
		case sig.Recv() != nil || isInterfaceMethod(o):
			if n := g.methodName(o); n != id.Name {
				g.ed.replaceText(id, n)
			}
		case def && o.Name() == "init" && packageLevel(o):
			// numbered by assemble
		default:
			if n, ok := g.exportNames[o]; ok {
				g.ed.replaceText(id, n)
			} else {
				g.keepName(id)
			}
		}
	default:
		g.keepName(id)
	}
}

// isInterfaceMethod reports whether fn is a method of an interface type.
func isInterfaceMethod(fn *types.Func) bool {
	r := fn.Type().(*types.Signature).Recv()
	if r == nil {
		return false
	}
	_, ok := r.Type().Underlying().(*types.Interface)
	return ok
}

// keepName makes the generated text say id.Name where check renamed the
// identifier (stand-ins for shadowed bindings).
func (g *gen) keepName(id *ast.Ident) {
	if g.sourceText(id) != id.Name {
		g.ed.replaceText(id, id.Name)
	}
}

func (g *gen) usedDot(path string) {
	g.usedPkgs["."+path] = true
}

// selector handles pkg.Name (imports, exits, blocking functions,
// os.Stdin) and field selections that cross into an earlier cell's
// unexported fields. stack ends with se.
func (g *gen) selector(se *ast.SelectorExpr, stack []ast.Node) {
	c := g.c
	if id, ok := se.X.(*ast.Ident); ok {
		if pn, ok := c.Info.Uses[id].(*types.PkgName); ok {
			path := pn.Imported().Path()
			repl, ok := exits[path][se.Sel.Name]
			if !ok {
				repl, ok = blockingFuncs[path][se.Sel.Name]
			}
			if ok {
				if _, isFunc := c.Info.Uses[se.Sel].(*types.Func); isFunc {
					if path == "runtime" && se.Sel.Name == "SetFinalizer" && g.plainFinalizer(stack) {
						repl = "_gxrt.SetFinalizerFunc"
					}
					g.ed.replaceText(se, repl)
					return
				}
			}
			if path == "os" && se.Sel.Name == "Stdin" && g.stdinUse(stack) {
				g.ed.replaceText(se, "_gxrt.Stdin")
				return
			}
			g.usedPkgs[pn.Name()] = true
			return
		}
	}
	sel := c.Info.Selections[se]
	if sel == nil || sel.Kind() != types.FieldVal {
		return
	}
	if !g.crossesForeignField(sel) {
		return
	}
	tv := c.Info.Types[se.X]
	g.ed.replace(se, func() string {
		return g.fieldPath(g.ed.render(se.X), sel.Recv(), sel.Index(), tv.Addressable())
	})
}

// plainFinalizer says whether the selector ending stack is called with a
// finalizer of one parameter and no results, which gxrt.SetFinalizerFunc
// wraps without reflect.
func (g *gen) plainFinalizer(stack []ast.Node) bool {
	if len(stack) < 2 {
		return false
	}
	call, ok := stack[len(stack)-2].(*ast.CallExpr)
	if !ok || call.Fun != stack[len(stack)-1] || len(call.Args) != 2 || call.Ellipsis.IsValid() {
		return false
	}
	tv, ok := g.c.Info.Types[call.Args[1]]
	if !ok || tv.Type == nil {
		return false
	}
	sig, ok := tv.Type.Underlying().(*types.Signature)
	return ok && sig.Params().Len() == 1 && sig.Results().Len() == 0 && !sig.Variadic() && sig.TypeParams().Len() == 0
}

// crossesForeignField reports whether a field selection goes through an
// unexported field of an earlier cell's struct.
func (g *gen) crossesForeignField(sel *types.Selection) bool {
	t := sel.Recv()
	for _, idx := range sel.Index() {
		st, ok := structOf(t)
		if !ok {
			return false
		}
		f := st.Field(idx)
		if g.foreign(f) {
			return true
		}
		t = f.Type()
	}
	return false
}

// foreign reports whether f is an unexported field that the generated
// package cannot name: declared by an earlier cell's code.
func (g *gen) foreign(f *types.Var) bool {
	if f.Exported() || f.Pkg() != g.c.Pkg || g.in.FieldHome == nil {
		return false
	}
	if g.adoptedFields[f] {
		return true
	}
	home := g.in.FieldHome(f.Origin()) // a field of an instance is its generic type's
	return home != "" && home != g.in.Path
}

// structOf returns the struct type under t (through one pointer).
func structOf(t types.Type) (*types.Struct, bool) {
	if p, ok := t.Underlying().(*types.Pointer); ok {
		t = p.Elem()
	}
	st, ok := t.Underlying().(*types.Struct)
	return st, ok
}

// fieldPath writes base.f1.f2... going through shadows where a field is
// foreign.
func (g *gen) fieldPath(base string, t types.Type, path []int, addressable bool) string {
	for _, idx := range path {
		ptr := false
		if p, ok := t.Underlying().(*types.Pointer); ok {
			ptr = true
			t = p.Elem()
		}
		st := t.Underlying().(*types.Struct)
		f := st.Field(idx)
		if g.foreign(f) {
			sh := g.shadowOf(t, st)
			var addr string
			switch {
			case ptr:
				addr = base
			case addressable:
				addr = "&" + paren(base)
			default:
				addr = "_gxrt.Ref(" + base + ")"
			}
			base = fmt.Sprintf("(*%s)(%s.Pointer(%s)).%s", sh, g.imp.name("unsafe", "unsafe"), addr, f.Name())
			addressable = true
		} else {
			base = paren(base) + "." + f.Name()
			addressable = addressable || ptr
		}
		t = f.Type()
	}
	return base
}

func paren(s string) string {
	if isSimple(s) {
		return s
	}
	return "(" + s + ")"
}

func isSimple(s string) bool {
	for _, r := range s {
		if !(r == '_' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r > 127) {
			return false
		}
	}
	return s != ""
}

// shadowOf returns the local struct type laid out as t, whose underlying
// struct is st. An instance of a generic type gets an instance of a generic
// shadow: the type arguments may be type parameters of the code at hand.
func (g *gen) shadowOf(t types.Type, st *types.Struct) string {
	n, ok := types.Unalias(t).(*types.Named)
	if !ok || n.TypeArgs().Len() == 0 {
		return g.shadow(st, nil)
	}
	orig := n.Origin()
	name := g.shadow(orig.Underlying().(*types.Struct), orig.TypeParams())
	args := make([]string, n.TypeArgs().Len())
	for i := range args {
		a, err := g.typeText(n.TypeArgs().At(i))
		if err != nil {
			g.fail("type argument of %s: %v", n.Obj().Name(), err)
		}
		args[i] = a
	}
	return name + "[" + strings.Join(args, ", ") + "]"
}

// shadow returns the name of a local struct type laid out as st, generic
// over tparams when they are given (st is then a generic type's struct).
func (g *gen) shadow(st *types.Struct, tparams *types.TypeParamList) string {
	for _, s := range g.shadows {
		if s.st == st || tparams == nil && s.tparams == nil && types.Identical(s.st, st) {
			return s.name
		}
	}
	name := fmt.Sprintf("_gxS%d", len(g.shadows)+1)
	params := ""
	if tparams != nil {
		var err error
		if params, _, err = g.typeParams(tparams); err != nil {
			g.fail("shadow of a generic struct: %v", err)
		}
	}
	var b strings.Builder
	b.WriteString("type " + name + params + " struct {\n")
	for i := 0; i < st.NumFields(); i++ {
		f := st.Field(i)
		t, err := g.typeText(f.Type())
		if err != nil {
			g.fail("field %s: %v", f.Name(), err)
		}
		fmt.Fprintf(&b, "\t%s %s\n", f.Name(), t)
	}
	b.WriteString("}\n")
	g.shadows = append(g.shadows, shadow{st: st, tparams: tparams, name: name, decl: b.String()})
	return name
}

// compositeLit builds literals of structs with foreign fields as shadows.
func (g *gen) compositeLit(lit *ast.CompositeLit, parent ast.Node) {
	c := g.c
	t := c.Info.Types[lit].Type
	if t == nil {
		return
	}
	pointer := false
	if p, ok := t.Underlying().(*types.Pointer); ok { // elided &T in []*T{{...}}
		t, pointer = p.Elem(), true
	}
	st, ok := t.Underlying().(*types.Struct)
	if !ok {
		return
	}
	anyForeign := false
	for i := 0; i < st.NumFields(); i++ {
		anyForeign = anyForeign || g.foreign(st.Field(i))
	}
	if !anyForeign {
		return
	}
	var node ast.Node = lit
	if u, ok := parent.(*ast.UnaryExpr); ok && u.Op == token.AND && u.X == lit {
		node, pointer = u, true
	}
	unsafe := g.imp.name("unsafe", "unsafe")
	g.ed.replace(node, func() string {
		var tt string
		if lit.Type != nil {
			tt = g.ed.render(lit.Type)
		} else {
			var err error
			if tt, err = g.typeText(t); err != nil {
				g.fail("composite literal: %v", err)
			}
		}
		inner := "&" + g.shadowOf(t, st) + "{" + g.ed.renderRange(lit.Lbrace+1, lit.Rbrace) + "}"
		if pointer {
			return fmt.Sprintf("(*%s)(%s.Pointer(%s))", tt, unsafe, inner)
		}
		return fmt.Sprintf("(*(*%s)(%s.Pointer(%s)))", tt, unsafe, inner)
	})
}

// call handles (*log.Logger).Fatal*, blocking methods of package sync and
// launcher calls.
func (g *gen) call(call *ast.CallExpr) {
	c := g.c
	se, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return
	}
	if sel := c.Info.Selections[se]; sel != nil && sel.Kind() == types.MethodVal {
		if g.syncCall(call, se, sel) {
			return
		}
		fn, _ := sel.Obj().(*types.Func)
		if fn != nil && fn.Pkg() != nil && fn.Pkg().Path() == "log" && strings.HasPrefix(fn.Name(), "Fatal") && recvNamed(sel.Recv(), "log", "Logger") {
			ptr := false
			if _, ok := sel.Recv().Underlying().(*types.Pointer); ok {
				ptr = true
			}
			g.ed.replace(call, func() string {
				recv := g.ed.render(se.X)
				if !ptr {
					recv = "&" + paren(recv)
				}
				args := g.ed.renderRange(call.Lparen+1, call.Rparen)
				return "_gxrt.Logger" + fn.Name() + "(" + recv + ", " + args + ")"
			})
		}
		return
	}
	fn, ok := c.Info.Uses[se.Sel].(*types.Func)
	if !ok || fn.Pkg() == nil {
		return
	}
	idx, ok := launchers[fn.Pkg().Path()][fn.Name()]
	if !ok || idx >= len(call.Args) {
		return
	}
	arg := call.Args[idx]
	id, ok := ast.Unparen(arg).(*ast.Ident)
	if !ok {
		return
	}
	if _, isFunc := c.Info.Uses[id].(*types.Func); !isFunc {
		return
	}
	name := id.Name
	if e := c.EntryOf(c.Info.Uses[id]); e != nil {
		name = e.Name
	}
	// Insertions around the argument, not a replacement of it that renders
	// it: that rendering would include the replacement itself (and the
	// argument keeps any edit of its own, e.g. a reference to an earlier
	// cell's function).
	g.ed.insert(arg.Pos(), "_gxrt.LaunchName("+quote(name)+", ")
	g.ed.insert(arg.End(), ")")
}

func recvNamed(t types.Type, path, name string) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == path && n.Obj().Name() == name
}

// goStmt runs the goroutine through gxrt.GoAt, which reports its panic
// instead of ending the kernel. The function and its arguments are
// evaluated where the go statement is, as Go does.
func (g *gen) goStmt(gs *ast.GoStmt) {
	c := g.c
	call := gs.Call
	g.ed.replace(gs, func() string {
		var b strings.Builder
		b.WriteString("{ ")
		fun := "_gxf"
		builtin := false
		if id, ok := ast.Unparen(call.Fun).(*ast.Ident); ok {
			if _, ok := c.Info.Uses[id].(*types.Builtin); ok {
				builtin, fun = true, id.Name
			}
		}
		if !builtin {
			b.WriteString("_gxf := " + g.ed.render(call.Fun) + "; ")
		}
		n := 0
		if len(call.Args) == 1 {
			if tup, ok := c.Info.Types[call.Args[0]].Type.(*types.Tuple); ok {
				n = tup.Len()
			} else {
				n = 1
			}
		} else {
			n = len(call.Args)
		}
		var names []string
		for i := 0; i < n; i++ {
			names = append(names, fmt.Sprintf("_gxa%d", i))
		}
		if n > 0 && (builtin || n != len(call.Args)) {
			b.WriteString(strings.Join(names, ", ") + " := " + g.ed.renderRange(call.Lparen+1, endOfArgs(call)) + "; ")
		} else if n > 0 {
			// One argument at a time, in order; an untyped constant or nil
			// takes the parameter's type, as it would in the call.
			sig, _ := c.Info.Types[call.Fun].Type.Underlying().(*types.Signature)
			for i, arg := range call.Args {
				b.WriteString(g.goArg(names[i], arg, sig, i, call.Ellipsis.IsValid()) + "; ")
			}
		}
		args := strings.Join(names, ", ")
		if call.Ellipsis.IsValid() {
			args += "..."
		}
		at := c.Fset.Position(gs.Pos())
		b.WriteString("_gxrt.GoAt(" + quote(fmt.Sprintf("%s:%d", at.Filename, at.Line)) + ", func() { " + fun + "(" + args + ") }) }")
		return b.String()
	})
}

// goArg evaluates argument i of a go statement's call into name.
func (g *gen) goArg(name string, arg ast.Expr, sig *types.Signature, i int, ellipsis bool) string {
	text := g.ed.render(arg)
	tv := g.c.Info.Types[arg]
	basic, _ := tv.Type.(*types.Basic)
	if sig == nil || !(tv.IsNil() || tv.Value != nil || basic != nil && basic.Info()&types.IsUntyped != 0) {
		return name + " := " + text
	}
	params := sig.Params()
	var pt types.Type
	switch {
	case sig.Variadic() && i >= params.Len()-1 && !ellipsis:
		pt = params.At(params.Len() - 1).Type().(*types.Slice).Elem()
	case i < params.Len():
		pt = params.At(i).Type()
	default:
		return name + " := " + text
	}
	t, err := g.typeText(pt)
	if err != nil {
		return name + " := " + text
	}
	return "var " + name + " " + t + " = " + text
}

// endOfArgs is where a call's arguments end (before a trailing "...").
func endOfArgs(call *ast.CallExpr) token.Pos {
	if len(call.Args) == 0 {
		return call.Lparen + 1
	}
	return call.Args[len(call.Args)-1].End()
}

// checkAt makes a body check for interrupts each time it starts; fn is
// the body of the function the check runs in.
func (g *gen) checkAt(body, fn *ast.BlockStmt) {
	if body == nil || g.in.NoChecks {
		return
	}
	g.ed.insert(body.Lbrace+1, g.checkCall(fn))
}

// checkCall is the interrupt check for code in the function whose body is
// fn (nil: the cell's statements).
func (g *gen) checkCall(fn *ast.BlockStmt) string {
	if fn == nil && g.c.Body != nil {
		fn = g.c.Body.Body
	}
	if fn != nil && defersRecover(fn) {
		return "_gxrt.CheckCall();"
	}
	return "_gxrt.Check();"
}

// enclosingBody is the body of the innermost function on stack (nil: the
// cell's statements).
func (g *gen) enclosingBody(stack []ast.Node) *ast.BlockStmt {
	for i := len(stack) - 1; i >= 0; i-- {
		switch f := stack[i].(type) {
		case *ast.FuncLit:
			return f.Body
		case *ast.FuncDecl:
			return f.Body
		}
	}
	return nil
}

// funcValue makes a value of an earlier cell's function the function
// itself rather than this package's wrapper (a value may be deferred, or
// compared by its code pointer); calls keep the wrapper, which inlines.
func (g *gen) funcValue(id *ast.Ident, e *check.Entry) bool {
	if e.Obj.Type().(*types.Signature).TypeParams().Len() > 0 {
		return false
	}
	h, ok := g.home(e)
	if !ok {
		return false
	}
	// In parentheses: a composite literal in a for, if or switch header
	// (for x := range seq) would otherwise open the block.
	g.ed.replaceText(id, "("+h+".GXA{}.V_"+e.Name+"())")
	return true
}

// deferStmt defers an earlier cell's function itself rather than this
// package's wrapper of it: Go's recover works only in the function that a
// defer calls, and the function may recover.
func (g *gen) deferStmt(d *ast.DeferStmt) {
	id, ok := ast.Unparen(d.Call.Fun).(*ast.Ident)
	if !ok {
		return
	}
	e := g.c.EntryOf(g.c.Info.Uses[id])
	if e != nil && e.Kind == check.FuncEntry && g.funcValue(id, e) {
		g.deferred[id] = true
	}
}

// defersRecover reports whether body itself (not a function literal in
// it) defers the recover builtin directly.
func defersRecover(body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.DeferStmt:
			if id, ok := ast.Unparen(n.Call.Fun).(*ast.Ident); ok && id.Name == "recover" {
				found = true
			}
		}
		return !found
	})
	return found
}

// funcDecl gives a function its interrupt check or, for a non-generic
// package-level function, its override hook: the engine sets the hook when
// a later cell redefines the function with the same signature, so that code
// compiled against this one calls the new one, and while a cell is being
// interrupted (see hookDecls).
func (g *gen) funcDecl(fd *ast.FuncDecl) {
	if fd.Body == nil {
		return
	}
	if fd.Recv != nil || fd.Type.TypeParams != nil || fd.Name.Name == "init" || fd.Name.Name == "_" {
		g.checkAt(fd.Body, fd.Body)
		return
	}
	obj, ok := g.c.Info.Defs[fd.Name].(*types.Func)
	if !ok {
		g.checkAt(fd.Body, fd.Body)
		return
	}
	g.hookFuncs[fd] = true
	// Name every parameter so the hook can pass them on.
	var args []string
	i := 0
	for _, field := range fd.Type.Params.List {
		_, variadic := field.Type.(*ast.Ellipsis)
		if len(field.Names) == 0 {
			name := fmt.Sprintf("_gxp%d", i)
			i++
			g.ed.insert(field.Type.Pos(), name+" ")
			args = append(args, name+dots(variadic))
			continue
		}
		for _, n := range field.Names {
			name := n.Name
			if name == "_" {
				name = fmt.Sprintf("_gxp%d", i)
				g.ed.replaceText(n, name)
			}
			i++
			args = append(args, name+dots(variadic))
		}
	}
	// While a cell is being interrupted, the engine sets every hook to one
	// that checks for it and then runs the function's body (a copy of it
	// without the prologue, _gxb_name; see hookDecls): so functions with
	// hooks, recursive ones included, need no check of their own, which
	// would cost every call.
	hook := "_gxo_" + obj.Name()
	call := "_gxh(" + strings.Join(args, ", ") + ")"
	var pro string
	if obj.Type().(*types.Signature).Results().Len() > 0 {
		pro = "if _gxh := " + hook + "; _gxh != nil { return " + call + " };"
	} else {
		pro = "if _gxh := " + hook + "; _gxh != nil { " + call + "; return };"
	}
	g.ed.add(fd.Body.Lbrace+1, fd.Body.Lbrace+1, func() string {
		if g.bare {
			return ""
		}
		return pro
	})
}

func dots(variadic bool) string {
	if variadic {
		return "..."
	}
	return ""
}
