package check

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
)

// notInHeapReceivers reports what go/types accepts and the compiler does
// not: a method whose receiver is a value of a type that may not live on
// the stack or the heap (one holding a runtime/cgo.Incomplete, i.e. the
// runtime's NotInHeap). Caught here, the message names the method's cell,
// and a method carried over to a redefined type of that kind is left
// behind (dropFailingDependents) rather than failing the cell's build.
func notInHeapReceivers(fset *token.FileSet, file *ast.File, info *types.Info) []Diag {
	var diags []Diag
	seen := map[types.Type]bool{}
	for _, d := range file.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv == nil || len(fd.Recv.List) != 1 {
			continue
		}
		recv := fd.Recv.List[0]
		t := info.TypeOf(recv.Type)
		if t == nil || !notInHeap(t, seen) {
			continue
		}
		pos := recv.Type.Pos()
		if len(recv.Names) > 0 {
			pos = recv.Names[0].Pos()
		}
		diags = append(diags, Diag{Pos: fset.Position(pos),
			Msg: fmt.Sprintf("%s is incomplete (or unallocatable); stack allocation disallowed", types.ExprString(recv.Type))})
	}
	return diags
}

// notInHeap says whether values of t may not be allocated (as the
// compiler decides: a struct or array holding the runtime's marker).
// memo holds the answers so far (and breaks cycles through pointers,
// which it does not follow anyway).
func notInHeap(t types.Type, memo map[types.Type]bool) bool {
	if v, ok := memo[t]; ok {
		return v
	}
	memo[t] = false
	v := false
	switch u := types.Unalias(t).(type) {
	case *types.Named:
		if obj := u.Obj(); obj.Pkg() != nil && obj.Pkg().Path() == "internal/runtime/sys" && obj.Name() == "NotInHeap" {
			v = true
		} else {
			v = notInHeap(u.Underlying(), memo)
		}
	case *types.Struct:
		for i := 0; i < u.NumFields() && !v; i++ {
			v = notInHeap(u.Field(i).Type(), memo)
		}
	case *types.Array:
		v = notInHeap(u.Elem(), memo)
	}
	memo[t] = v
	return v
}
