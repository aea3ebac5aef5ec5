package complete

import (
	"reflect"
	"sort"
)

// Decl is one declaration made by an earlier cell, as the engine logged it.
type Decl struct {
	// Name is the declared identifier; for a method, "T.M".
	Name string
	// Kind is "func", "type", "var" or "const".
	Kind string
	// Signature is the declaration header in Go syntax, e.g.
	// "func F(a int) string", "type T struct{ X int }", "var x int"; it may
	// be empty. For a var whose type the engine knows, "var x T" lets
	// member completion on x work even when Source cannot be re-checked.
	Signature string
	// Doc is the doc comment, without comment markers; it may be empty.
	Doc string
	// Source is the declaration as the user wrote it: a top-level
	// declaration ("func F() {...}", "var x = 1") or a short variable
	// declaration statement ("x := f()").
	Source string
}

// Scope is what earlier cells left behind. The engine implements it from its
// declaration log. Methods may be called concurrently and must not block.
type Scope interface {
	// Declarations lists the names declared so far; for a name declared
	// more than once, only the latest declaration should be listed.
	Declarations() []Decl
	// Imports maps the local name of each imported package ("fmt", or the
	// alias) to its import path.
	Imports() map[string]string
}

// SymbolScope may also be implemented by a Scope whose interpreter offers
// packages besides the standard library (interp.Use). Symbols has the shape
// of stdlib.Symbols and interp.Exports: "path/name" → symbol → value. Those
// packages become importable names and their members complete by reflection
// (without doc comments).
type SymbolScope interface {
	Scope
	Symbols() map[string]map[string]reflect.Value
}

// scopeData is a snapshot of a Scope, read once per request with panics
// recovered.
type scopeData struct {
	decls   []Decl
	imports map[string]string
	symbols map[string]map[string]reflect.Value
}

func readScope(s Scope) (d scopeData) {
	d.imports = map[string]string{}
	if s == nil || (reflect.ValueOf(s).Kind() == reflect.Pointer && reflect.ValueOf(s).IsNil()) {
		return d
	}
	func() {
		defer func() { _ = recover() }()
		d.decls = s.Declarations()
	}()
	func() {
		defer func() { _ = recover() }()
		for k, v := range s.Imports() {
			d.imports[k] = v
		}
	}()
	if ss, ok := s.(SymbolScope); ok {
		func() {
			defer func() { _ = recover() }()
			d.symbols = ss.Symbols()
		}()
	}
	return d
}

// decl returns the latest declaration of name.
func (d scopeData) decl(name string) (Decl, bool) {
	for i := len(d.decls) - 1; i >= 0; i-- {
		if d.decls[i].Name == name {
			return d.decls[i], true
		}
	}
	return Decl{}, false
}

// importNames returns the local names of the scope's imports, sorted.
func (d scopeData) importNames() []string {
	names := make([]string, 0, len(d.imports))
	for k := range d.imports {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}
