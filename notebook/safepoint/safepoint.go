// Package safepoint makes library code interruptible: it rewrites the Go
// files of a package that cells call (a module's, not the standard
// library's) so that every loop iteration checks whether the goroutine
// running it belongs to an interrupted cell, as the code generated from
// cells does (package gxrt), and says which packages and functions get
// such checks (Select).
//
// A safe point is the start of a loop body in a rewritten package: there
// the goroutine is between two statements of ordinary Go code, and a panic
// there is the panic any statement of that code may raise (a nil map
// write, an index out of range): the goroutine unwinds, its deferred calls
// run, a recover in the library sees gxrt.Interrupt. The standard library
// is never rewritten, so no goroutine stops inside the runtime, sync, or a
// system call wrapper; a goroutine in a cgo call stops at the next safe
// point after the call returns.
//
// Locks: a lock a library releases in a deferred call is released by the
// unwinding; one it holds across a loop and releases after it (mu.Lock();
// for ...; mu.Unlock()) would stay held. A function that calls a Lock or
// RLock method without deferring the matching unlock right after it gets
// no safe points, and neither do functions marked //go:nosplit or
// //go:systemstack (a check may grow the stack). What this cannot see: a
// function with a loop called while its caller holds such a lock (the
// caller's Lock, the call, then Unlock) unwinds with the caller's lock
// held; the lock then stays held for the rest of the session. Code whose state must
// not be left half-updated by an unwinding (a training step applying its
// updates) gets none either (Select).
//
// Why the process stays sound: the check is gxrt.Check (gxrt.Stmt for
// the loops Select marks Strong), an atomic load that panics only in a
// goroutine of a run the engine stopped; the panic is
// an ordinary Go panic at a statement boundary of ordinary Go code, the
// runtime's and the standard library's invariants are never in the middle
// of an update there, and the goroutines of other cells and of the kernel
// never see it.
//
// Rewrites keep every line where it was: the check is inserted after the
// loop's opening brace, and the import after the package clause, on their
// own lines, so that compile errors and stack traces name the library's
// lines.
package safepoint

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"sort"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/notebook/cells"
)

// CheckImport is the package whose Check the rewritten code calls.
const CheckImport = "github.com/goaccel/goaccel/notebook/gxrt"

// checkName is the name the rewritten files import CheckImport as.
const checkName = "_gxsafepoint"

// Rewrite returns src with a check at the start of every loop body that may
// have one, in the functions funcs accepts (all when funcs is nil; a
// method is named Type.Method, the loops of package-level variables'
// initializers "init"). A strong check also ends a goroutine that outlived
// its interrupt (gxrt.Stmt, for loops whose iterations are steps: a plain
// check sees such a goroutine only in short windows, which a loop whose
// every iteration spends seconds in a cgo call misses). changed is false
// (and out nil) when the file has none: no loops, or a cgo file (its
// preamble and the code cgo generates beside it are left alone).
func Rewrite(filename string, src []byte, funcs func(name string) bool, strong bool) (out []byte, changed bool, err error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filename, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, false, fmt.Errorf("safepoint: %w", err)
	}
	for _, im := range f.Imports {
		if p, _ := strconv.Unquote(im.Path.Value); p == "C" {
			return nil, false, nil
		}
	}
	tf := fset.File(f.Pos())
	var at []int // offsets after which a check goes
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if ok && (fd.Body == nil || !mayStop(fd.Doc, fd.Body)) {
			continue
		}
		if funcs != nil && !funcs(declName(d)) {
			continue
		}
		ast.Inspect(d, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncLit:
				// A closure holding a lock of its own: none in it.
				return mayStop(nil, n.Body)
			case *ast.ForStmt:
				at = append(at, tf.Offset(n.Body.Lbrace)+1)
			case *ast.RangeStmt:
				at = append(at, tf.Offset(n.Body.Lbrace)+1)
			}
			return true
		})
	}
	if len(at) == 0 {
		return nil, false, nil
	}
	sort.Ints(at)
	call := checkName + ".Check();"
	if strong {
		call = checkName + ".Stmt();"
	}
	var b bytes.Buffer
	b.Grow(len(src) + len(at)*24 + 80)
	imp := tf.Offset(f.Name.End())
	prev := 0
	for _, off := range append([]int{imp}, at...) {
		b.Write(src[prev:off])
		if off == imp {
			// On the package clause's line: lines keep their numbers.
			fmt.Fprintf(&b, "; import %s %q", checkName, CheckImport)
		} else {
			b.WriteString(call)
		}
		prev = off
	}
	b.Write(src[prev:])
	return b.Bytes(), true, nil
}

// declName names a declaration for Rewrite's funcs: F, T.M (pointer
// receivers too), or "init" for a declaration that is not a function.
func declName(d ast.Decl) string {
	fd, ok := d.(*ast.FuncDecl)
	if !ok {
		return "init"
	}
	if t := cells.ReceiverType(fd); t != "" {
		return t + "." + fd.Name.Name
	}
	return fd.Name.Name
}

// mayStop reports whether a function with this doc comment and body may
// have safe points: not when a directive forbids a call that may grow the
// stack, nor when it takes a lock without deferring its release.
func mayStop(doc *ast.CommentGroup, body *ast.BlockStmt) bool {
	if doc != nil {
		for _, c := range doc.List {
			switch strings.TrimSpace(c.Text) {
			case "//go:nosplit", "//go:systemstack", "//go:nowritebarrier", "//go:nowritebarrierrec", "//go:yeswritebarrierrec":
				return false
			}
		}
	}
	return !holdsLock(body)
}

// holdsLock reports whether a statement list of body (outside closures)
// calls a Lock or RLock method that the next statement does not undo with
// a deferred Unlock or RUnlock: such a function may hold a lock while it
// loops, and an unwinding there would leave the lock held.
func holdsLock(body *ast.BlockStmt) bool {
	held := false
	ast.Inspect(body, func(n ast.Node) bool {
		if held {
			return false
		}
		var list []ast.Stmt
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.BlockStmt:
			list = n.List
		case *ast.CaseClause:
			list = n.Body
		case *ast.CommClause:
			list = n.Body
		default:
			return true
		}
		for i, s := range list {
			recv, m := lockCall(s)
			if m == "" {
				continue
			}
			if i+1 < len(list) && deferredUnlock(list[i+1], recv, m) {
				continue
			}
			held = true
			return false
		}
		return true
	})
	return held
}

// lockCall returns the receiver's text and the method of a statement
// x.Lock() or x.RLock().
func lockCall(s ast.Stmt) (recv, method string) {
	es, ok := s.(*ast.ExprStmt)
	if !ok {
		return "", ""
	}
	return methodCall(es.X, "Lock", "RLock")
}

// deferredUnlock reports whether s is defer recv.Unlock() (RUnlock for an
// RLock).
func deferredUnlock(s ast.Stmt, recv, lock string) bool {
	ds, ok := s.(*ast.DeferStmt)
	if !ok {
		return false
	}
	want := "Unlock"
	if lock == "RLock" {
		want = "RUnlock"
	}
	r, m := methodCall(ds.Call, want)
	return m != "" && r == recv
}

// methodCall matches a call of one of the methods with no arguments.
func methodCall(e ast.Expr, methods ...string) (recv, method string) {
	call, ok := e.(*ast.CallExpr)
	if !ok || len(call.Args) != 0 {
		return "", ""
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return "", ""
	}
	for _, m := range methods {
		if sel.Sel.Name == m {
			return exprText(sel.X), m
		}
	}
	return "", ""
}

// exprText is a selector chain's text (mu, s.mu, s.state.mu), or "" for
// anything else.
func exprText(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		if x := exprText(e.X); x != "" {
			return x + "." + e.Sel.Name
		}
	case *ast.ParenExpr:
		return exprText(e.X)
	case *ast.StarExpr:
		return exprText(e.X)
	}
	return ""
}
