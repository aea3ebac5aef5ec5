package yaegirunner

// Launches from interpreted cells: Go function values carry no name the
// interpreter could give back, so the rewriter wraps the function argument
// of every launcher call in _gxrt.LaunchName("train", train), and the
// launch payload (package launch) learns the function's name when the
// launcher asks.

import (
	"go/ast"
	"go/token"
	"strconv"
	"strings"
)

// launcherFuncs are the launcher entry points whose function argument the
// rewriter names: import path → function → index of the function argument.
var launcherFuncs = map[string]map[string]int{
	"github.com/goaccel/goaccel/launcher": {
		"NotebookLauncher": 0, "NotebookLauncherContext": 1,
	},
	"github.com/goaccel/goaccel/debuglauncher": {
		"DebugLauncher": 0, "DebugLauncherContext": 1,
	},
}

// launchCalls wraps the function argument of launcher calls with its name.
func (r *rewriter) launchCalls(root ast.Node) {
	ast.Inspect(root, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		pkg, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		path := r.rn.importPath(pkg.Name, r.pc)
		idx, ok := launcherFuncs[path][sel.Sel.Name]
		if !ok || idx >= len(call.Args) {
			return true
		}
		if id, ok := call.Args[idx].(*ast.Ident); ok {
			call.Args[idx] = &ast.CallExpr{
				Fun:  &ast.SelectorExpr{X: ast.NewIdent("_gxrt"), Sel: ast.NewIdent("LaunchName")},
				Args: []ast.Expr{&ast.BasicLit{Kind: token.STRING, Value: strconv.Quote(id.Name)}, id},
			}
		}
		return true
	})
}

// importPath resolves a package name used in a cell: this cell's imports
// first, then earlier cells'.
func (r *Runner) importPath(name string, pc *parsedCell) string {
	if pc != nil && pc.imports != nil {
		for _, is := range pc.imports.Imports {
			p, _ := strconv.Unquote(is.Path.Value)
			local := p[strings.LastIndex(p, "/")+1:]
			if is.Name != nil {
				local = is.Name.Name
			}
			if local == name {
				return p
			}
		}
	}
	return r.log.ImportPath(name)
}
