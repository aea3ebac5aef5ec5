package check

import (
	"fmt"
	"go/token"
	"go/types"
	"reflect"
	"unsafe"
)

// newPackageScope gives pkg a fresh, empty package scope and returns it.
//
// Every cell of a session is checked as the same *types.Package: go/types
// compares packages by identity in several places (positional literals of
// structs with unexported fields, unexported methods in interfaces, how
// types are named in messages), and in a notebook all cells are one package.
// Go's API has no way to remove a name from a scope, and a later cell may
// bind a name again, so each check starts from a new scope holding the
// session's current bindings. The scope lives in an unexported field of
// types.Package; TestScopeField guards the assumption.
func newPackageScope(pkg *types.Package) (*types.Scope, error) {
	f := reflect.ValueOf(pkg).Elem().FieldByName("scope")
	if !f.IsValid() || f.Type() != reflect.TypeOf((*types.Scope)(nil)) {
		return nil, fmt.Errorf("check: go/types.Package has no scope field of type *types.Scope (the Go version changed its layout)")
	}
	scope := types.NewScope(types.Universe, token.NoPos, token.NoPos, fmt.Sprintf("package %q", pkg.Path()))
	reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Set(reflect.ValueOf(scope))
	return scope, nil
}
