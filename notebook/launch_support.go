package notebook

import (
	"go/ast"
	"go/printer"
	"go/token"
	"io"
	"os"
)

var (
	osStdout = os.Stdout
	osStderr = os.Stderr
)

func printerFprint(w io.Writer, x ast.Expr) error {
	return printer.Fprint(w, token.NewFileSet(), x)
}
