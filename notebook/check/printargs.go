package check

import (
	"go/ast"
	"go/token"
	"go/types"
	"strings"
)

// printOperands reports what go/types accepts and the compiler does not:
// an argument of the builtin print or println whose type the runtime
// cannot print (an array or a struct). Caught here, the message is the
// compiler's and names the cell, and an earlier declaration recompiled
// for a cell whose new types make such a call illegal keeps its old
// definition (dropFailingDependents) instead of failing the cell's build.
// Arguments of a type parameter's type are the compiler's to judge, per
// instance.
func printOperands(fset *token.FileSet, file *ast.File, info *types.Info) []Diag {
	var diags []Diag
	ast.Inspect(file, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		id, ok := ast.Unparen(call.Fun).(*ast.Ident)
		if !ok {
			return true
		}
		if b, ok := info.Uses[id].(*types.Builtin); !ok || (b.Name() != "print" && b.Name() != "println") {
			return true
		}
		for _, arg := range call.Args {
			t := info.TypeOf(arg)
			if t == nil || printable(t) {
				continue
			}
			diags = append(diags, Diag{Pos: fset.Position(call.Lparen),
				Msg: "illegal types for operand: print\n\t" + compilerTypeString(t)})
		}
		return true
	})
	return diags
}

// printable says whether the runtime has a print function for values of
// type t (cmd/compile's walkPrint): all but arrays and structs. A type
// parameter's underlying type is its constraint, an interface: the
// compiler judges each instance.
func printable(t types.Type) bool {
	switch t.Underlying().(type) {
	case *types.Struct, *types.Array:
		return false
	}
	return true
}

// compilerTypeString writes t as the compiler's messages do: the cells'
// own types unqualified (a cell is package main), others by package name.
func compilerTypeString(t types.Type) string {
	return types.TypeString(t, func(p *types.Package) string {
		if p == nil || p.Name() == "main" || strings.HasPrefix(p.Path(), "goaccel.cells/") {
			return ""
		}
		return p.Name()
	})
}
