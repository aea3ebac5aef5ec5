package gen

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strings"
)

// Interruptible cell code: besides the checks at function entries and
// loop iterations (checkAt), the blocking operations of a cell's code are
// rewritten into gxrt's, which also end when the cell is interrupted:
//
//	<-ch                    _gxrt.Recv(ch)
//	v, ok := <-ch           v, ok := _gxrt.Recv2(ch)
//	ch <- v                 _gxrt.SendTo(ch).Send(v)
//	for v := range ch {     for _gxc1 := ch; ; { v, _gxok1 := _gxrt.Recv2(_gxc1); if !_gxok1 { break }; ...
//	select {}               for { _gxrt.Block() }
//	select { cases }        _gxs1: select { case <-_gxrt.Intr(): _gxrt.Wake(); goto _gxs1; cases }
//	time.Sleep(d)           _gxrt.Sleep(d)
//	wg.Wait()               _gxrt.Wait(&wg)         (sync.WaitGroup)
//	wg.Go(f)                _gxrt.WaitGroupGo(&wg, "cell[1]:3", f)  (a goroutine of the cell)
//	mu.Lock()               _gxrt.Lock(&mu)         (sync.Mutex; RWMutex: LockRW, RLock; sync.Locker: LockLocker)
//
// The user's select cases and their bodies stay as they are; a select with
// a default case does not block and is left alone. Standard input is read
// through gxrt too: fmt.Scan, Scanln and Scanf become gxrt's, and os.Stdin
// where it is used as an io.Reader becomes _gxrt.Stdin.

// blockingFuncs are package functions cells call gxrt's versions of, by
// import path and name.
var blockingFuncs = map[string]map[string]string{
	"time": {"Sleep": "_gxrt.Sleep"},
	"fmt":  {"Scan": "_gxrt.Scan", "Scanln": "_gxrt.Scanln", "Scanf": "_gxrt.Scanf"},
}

// blockingMethods are methods of package sync cells call gxrt's versions
// of: receiver type name and method → gxrt function.
var blockingMethods = map[string]string{
	"Mutex.Lock":     "_gxrt.Lock",
	"RWMutex.Lock":   "_gxrt.LockRW",
	"RWMutex.RLock":  "_gxrt.RLock",
	"WaitGroup.Wait": "_gxrt.Wait",
	"WaitGroup.Go":   "_gxrt.WaitGroupGo",
	"Locker.Lock":    "_gxrt.LockLocker",
}

// between is the cell's text from a to b.
func (g *gen) between(a, b token.Pos) string {
	tf := g.c.Fset.File(a)
	if tf == nil {
		return ""
	}
	text := g.c.Text(tf)
	x, y := tf.Offset(a), tf.Offset(b)
	if x < 0 || y > len(text) || x > y {
		return ""
	}
	return text[x:y]
}

// lineBreaks are the line breaks in the cell's text from a to b: what a
// rewrite keeps of the text it drops, so that lines keep their numbers.
func (g *gen) lineBreaks(a, b token.Pos) string {
	return strings.Repeat("\n", strings.Count(g.between(a, b), "\n"))
}

// seq numbers the names gen makes up (labels, variables).
func (g *gen) seq() int {
	g.nseq++
	return g.nseq
}

// markComms records the communications of a select's cases: they stay as
// they are.
func (g *gen) markComms(ss *ast.SelectStmt) {
	for _, cl := range ss.Body.List {
		cc := cl.(*ast.CommClause)
		switch c := cc.Comm.(type) {
		case *ast.SendStmt:
			g.comms[c] = true
		case *ast.ExprStmt:
			g.comms[ast.Unparen(c.X)] = true
		case *ast.AssignStmt:
			if len(c.Rhs) == 1 {
				g.comms[ast.Unparen(c.Rhs[0])] = true
			}
		}
	}
}

// recv rewrites a receive operation.
func (g *gen) recv(u *ast.UnaryExpr) {
	if u.Op != token.ARROW || g.comms[u] {
		return
	}
	fn := "_gxrt.Recv("
	if _, ok := g.c.Info.Types[u].Type.(*types.Tuple); ok {
		fn = "_gxrt.Recv2("
	}
	g.ed.replace(u, func() string {
		return fn + g.lineBreaks(u.OpPos+2, u.X.Pos()) + g.ed.render(u.X) + ")"
	})
}

// send rewrites a send statement.
func (g *gen) send(s *ast.SendStmt) {
	if g.comms[s] {
		return
	}
	g.ed.replace(s, func() string {
		return "_gxrt.SendTo(" + g.ed.render(s.Chan) + ").Send(" + g.lineBreaks(s.Arrow+2, s.Value.Pos()) + g.ed.render(s.Value) + ")"
	})
}

// rangeChan rewrites a range loop over a channel into a loop of receives
// (the channel is evaluated once, as range does). It reports whether rs
// ranges over a channel.
func (g *gen) rangeChan(rs *ast.RangeStmt) bool {
	t := g.c.Info.TypeOf(rs.X)
	if t == nil {
		return false
	}
	if _, ok := coreType(t).(*types.Chan); !ok {
		return false
	}
	n := g.seq()
	ch, ok := fmt.Sprintf("_gxc%d", n), fmt.Sprintf("_gxok%d", n)
	head := rs.Body.Lbrace + 1
	g.ed.add(rs.For, head, func() string {
		var b strings.Builder
		b.WriteString("for " + ch + " := " + g.ed.render(rs.X) + "; ; { ")
		recv := "_gxrt.Recv2(" + ch + "); if !" + ok + " { break }; "
		switch {
		case rs.Key == nil:
			b.WriteString("if _, " + ok + " := _gxrt.Recv2(" + ch + "); !" + ok + " { break }; ")
		case rs.Tok == token.DEFINE:
			key := g.ed.render(rs.Key)
			b.WriteString(key + ", " + ok + " := " + recv)
			if key != "_" {
				b.WriteString("_ = " + key + "; ")
			}
		default:
			v := fmt.Sprintf("_gxv%d", n)
			b.WriteString(v + ", " + ok + " := " + recv + g.ed.render(rs.Key) + " = " + v + "; ")
		}
		// Keep the line count of the header.
		s := b.String()
		if missing := strings.Count(g.between(rs.For, head), "\n") - strings.Count(s, "\n"); missing > 0 {
			s += strings.Repeat("\n", missing)
		}
		return s
	})
	return true
}

// selectStmt makes a select statement end when the cell is interrupted.
// stack ends with ss.
func (g *gen) selectStmt(ss *ast.SelectStmt, stack []ast.Node) {
	g.markComms(ss)
	if len(ss.Body.List) == 0 {
		g.ed.replace(ss, func() string {
			// for {} keeps the statement terminating.
			return "for { _gxrt.Block() }" + strings.Repeat("\n", strings.Count(g.between(ss.Pos(), ss.End()), "\n"))
		})
		return
	}
	for _, cl := range ss.Body.List {
		if cl.(*ast.CommClause).Comm == nil {
			return // a default case: it does not block
		}
	}
	label := fmt.Sprintf("_gxs%d", g.seq())
	// The label goes before the select's own labels.
	pos := ss.Pos()
	var child ast.Node = ss
	for i := len(stack) - 2; i >= 0; i-- {
		l, ok := stack[i].(*ast.LabeledStmt)
		if !ok || l.Stmt != child {
			break
		}
		pos, child = l.Pos(), l
	}
	g.ed.insert(pos, label+": ")
	g.ed.insert(ss.Body.Lbrace+1, "case <-_gxrt.Intr(): _gxrt.Wake(); goto "+label+";")
}

// syncCall rewrites a blocking method call of package sync. It reports
// whether it did.
func (g *gen) syncCall(call *ast.CallExpr, se *ast.SelectorExpr, sel *types.Selection) bool {
	fn, _ := sel.Obj().(*types.Func)
	if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != "sync" || len(call.Args) != 0 && fn.Name() != "Go" {
		return false
	}
	recv := fn.Type().(*types.Signature).Recv()
	if recv == nil {
		return false
	}
	rt := recv.Type()
	if p, ok := rt.(*types.Pointer); ok {
		rt = p.Elem()
	}
	named, ok := types.Unalias(rt).(*types.Named)
	if !ok {
		return false
	}
	repl, ok := blockingMethods[named.Obj().Name()+"."+fn.Name()]
	if !ok {
		return false
	}
	// The value the method is called on: se.X, or the embedded field the
	// method is promoted from.
	path := sel.Index()
	t := sel.Recv()
	for _, idx := range path[:len(path)-1] {
		st, ok := structOf(t)
		if !ok {
			return false
		}
		t = st.Field(idx).Type()
	}
	_, iface := t.Underlying().(*types.Interface)
	_, ptr := t.Underlying().(*types.Pointer)
	addressable := g.c.Info.Types[se.X].Addressable()
	g.ed.replace(call, func() string {
		x := g.fieldPath(g.ed.render(se.X), sel.Recv(), path[:len(path)-1], addressable)
		if !iface && !ptr {
			x = "&" + paren(x)
		}
		if fn.Name() == "Go" {
			// wg.Go(f): f's goroutine is one of the cell's (it stops with it).
			at := g.c.Fset.Position(call.Pos())
			return repl + "(" + x + ", " + quote(fmt.Sprintf("%s:%d", at.Filename, at.Line)) + ", " + g.ed.renderRange(call.Lparen+1, call.Rparen) + ")"
		}
		return repl + "(" + x + ")"
	})
	return true
}

// stdinUse reports whether the os.Stdin at the end of stack is used as an
// io.Reader: passed or assigned where an interface type with no methods but
// Read is expected, or its Read method called.
func (g *gen) stdinUse(stack []ast.Node) bool {
	i := len(stack) - 1
	n := stack[i]
	for i > 0 {
		p, ok := stack[i-1].(*ast.ParenExpr)
		if !ok {
			break
		}
		n = p
		i--
	}
	if i == 0 {
		return false
	}
	if se, ok := stack[i-1].(*ast.SelectorExpr); ok {
		if se.X != n || se.Sel.Name != "Read" || i < 2 {
			return false
		}
		call, ok := stack[i-2].(*ast.CallExpr)
		return ok && call.Fun == se
	}
	return isReaderType(g.expectedType(stack[:i], n))
}

// isReaderType reports an interface type whose methods are all Read.
func isReaderType(t types.Type) bool {
	if t == nil {
		return false
	}
	it, ok := t.Underlying().(*types.Interface)
	if !ok || it.NumMethods() == 0 {
		return false
	}
	for i := 0; i < it.NumMethods(); i++ {
		if it.Method(i).Name() != "Read" {
			return false
		}
	}
	return true
}

// expectedType is the type the expression n is assigned to where it is
// used (stack ends with n's parent): a parameter's, an assignment's left
// side's, a declared variable's, a result's, a conversion's; nil when it
// is none of those.
func (g *gen) expectedType(stack []ast.Node, n ast.Node) types.Type {
	info := g.c.Info
	switch p := stack[len(stack)-1].(type) {
	case *ast.CallExpr:
		idx := -1
		for j, a := range p.Args {
			if a == n {
				idx = j
			}
		}
		if idx < 0 {
			return nil
		}
		tv := info.Types[p.Fun]
		if tv.IsType() {
			return tv.Type
		}
		sig, ok := coreType(tv.Type).(*types.Signature)
		if !ok {
			return nil
		}
		params := sig.Params()
		if sig.Variadic() && idx >= params.Len()-1 {
			if p.Ellipsis.IsValid() {
				return nil
			}
			return params.At(params.Len() - 1).Type().(*types.Slice).Elem()
		}
		if idx < params.Len() {
			return params.At(idx).Type()
		}
	case *ast.AssignStmt:
		if p.Tok == token.ASSIGN && len(p.Lhs) == len(p.Rhs) {
			for j, r := range p.Rhs {
				if r == n {
					return info.TypeOf(p.Lhs[j])
				}
			}
		}
	case *ast.ValueSpec:
		if p.Type != nil {
			return info.TypeOf(p.Type)
		}
	case *ast.ReturnStmt:
		idx := -1
		for j, r := range p.Results {
			if r == n {
				idx = j
			}
		}
		for k := len(stack) - 2; k >= 0 && idx >= 0; k-- {
			var sig *types.Signature
			switch f := stack[k].(type) {
			case *ast.FuncLit:
				sig, _ = info.TypeOf(f).(*types.Signature)
			case *ast.FuncDecl:
				if obj := info.Defs[f.Name]; obj != nil {
					sig, _ = obj.Type().(*types.Signature)
				}
			default:
				continue
			}
			if sig != nil && sig.Results().Len() == len(p.Results) {
				return sig.Results().At(idx).Type()
			}
			return nil
		}
	}
	return nil
}

// coreType is t's underlying type, or for a type parameter the underlying
// type all of its type set shares (nil if none).
func coreType(t types.Type) types.Type {
	tp, ok := t.(*types.TypeParam)
	if !ok {
		return t.Underlying()
	}
	it, ok := tp.Constraint().Underlying().(*types.Interface)
	if !ok {
		return nil
	}
	var core types.Type
	for i := 0; i < it.NumEmbeddeds(); i++ {
		var terms []types.Type
		switch e := it.EmbeddedType(i).(type) {
		case *types.Union:
			for j := 0; j < e.Len(); j++ {
				terms = append(terms, e.Term(j).Type())
			}
		default:
			terms = append(terms, e)
		}
		for _, term := range terms {
			u := coreType(term)
			if u == nil {
				return nil
			}
			if _, isIface := u.(*types.Interface); isIface {
				continue
			}
			if core == nil {
				core = u
			} else if !types.Identical(core, u) {
				return nil
			}
		}
	}
	return core
}
