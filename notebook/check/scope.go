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
// types.Package; a Go release that changes that makes every check fail
// with an error saying so.
func newPackageScope(pkg *types.Package) (*types.Scope, error) {
	f := reflect.ValueOf(pkg).Elem().FieldByName("scope")
	if !f.IsValid() || f.Type() != reflect.TypeOf((*types.Scope)(nil)) {
		return nil, fmt.Errorf("check: go/types.Package has no scope field of type *types.Scope (the Go version changed its layout)")
	}
	scope := types.NewScope(types.Universe, token.NoPos, token.NoPos, fmt.Sprintf("package %q", pkg.Path()))
	reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Set(reflect.ValueOf(scope))
	return scope, nil
}

// adopt makes scope the parent of the session's package-level objects.
//
// Objects of earlier cells keep the package scope of the check that
// declared them, which is no longer the package's. Parts of go/types walk
// from an object of the package up to the package scope (the
// instantiation cycle check, for a type argument of the package) and would
// walk past the universe instead: to them, as to a Go user, every cell's
// declarations are at the package's top level. The parent field is
// unexported; a Go release that changes that makes checks fail with an
// error saying so.
func adopt(scope *types.Scope, objs map[types.Object]*Entry, offsets parentOffsets) error {
	for obj := range objs {
		if p := obj.Parent(); p == nil || p == scope || p.Parent() != types.Universe {
			continue // methods, fields and locals have other parents
		}
		off, err := offsets.of(obj)
		if err != nil {
			return err
		}
		*(**types.Scope)(unsafe.Add(reflect.ValueOf(obj).UnsafePointer(), off)) = scope
	}
	return nil
}

// parentOffsets caches where the parent field lies in each kind of object:
// a check re-parents every object of the session, so finding the field by
// name each time would cost a cell about a microsecond per declaration.
type parentOffsets map[reflect.Type]uintptr

func (po parentOffsets) of(obj types.Object) (uintptr, error) {
	t := reflect.TypeOf(obj).Elem()
	if off, ok := po[t]; ok {
		return off, nil
	}
	f, ok := t.FieldByName("parent")
	if !ok || f.Type != reflect.TypeOf((*types.Scope)(nil)) {
		return 0, fmt.Errorf("check: go/types objects have no parent field of type *types.Scope (the Go version changed their layout)")
	}
	po[t] = f.Offset
	return f.Offset, nil
}
