package cellrun

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strings"

	"github.com/goaccel/goaccel/notebook/cells"
)

// SplitCells cuts a Go program into the cells a notebook user would write:
// its imports first, then each top-level declaration in a cell of its own,
// ordered so that a cell uses only what earlier cells declared (declarations
// that use each other, such as a type and its methods, share a cell), as
// close to the source order as that allows; init functions come after
// everything they could use, and func main last, so its cell runs the
// program. A source that does not parse is one cell, so that the engine
// reports Go's syntax error.
func SplitCells(src []byte) []string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "prog.go", src, parser.ParseComments)
	if err != nil {
		return []string{string(src)}
	}
	text := func(n ast.Node, doc *ast.CommentGroup) string {
		start := n.Pos()
		if doc != nil {
			start = doc.Pos()
		}
		return string(src[fset.Position(start).Offset:fset.Position(n.End()).Offset])
	}
	var imports []string
	var decls []ast.Decl
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
			imports = append(imports, text(g, g.Doc))
			continue
		}
		decls = append(decls, d)
	}
	g := newDeclGraph(decls)
	var out []string
	if len(imports) > 0 {
		out = append(out, strings.Join(imports, "\n"))
	}
	for _, group := range g.order() {
		var parts []string
		for _, i := range group {
			switch d := decls[i].(type) {
			case *ast.FuncDecl:
				parts = append(parts, text(d, d.Doc))
			case *ast.GenDecl:
				parts = append(parts, text(d, d.Doc))
			}
		}
		out = append(out, strings.Join(parts, "\n\n"))
	}
	return out
}

// declGraph is "declaration i uses declaration j" over a file's top-level
// declarations, by name (a local that shadows a top-level name adds an
// edge too; that only merges cells).
type declGraph struct {
	n    int
	uses [][]int
	step []bool // the declaration runs code when its cell runs: var, init, main
}

func newDeclGraph(decls []ast.Decl) *declGraph {
	g := &declGraph{n: len(decls), uses: make([][]int, len(decls)), step: make([]bool, len(decls))}
	declaring := map[string][]int{} // top-level name → declarations
	methods := map[string][]int{}   // receiver type name → its methods
	var inits []int
	mainDecl := -1
	for i, d := range decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			switch {
			case d.Recv != nil:
				if t := cells.ReceiverType(d); t != "" {
					methods[t] = append(methods[t], i)
				}
			case d.Name.Name == "init":
				inits = append(inits, i)
				g.step[i] = true
			case d.Name.Name == "main":
				mainDecl = i
				g.step[i] = true
				declaring["main"] = append(declaring["main"], i)
			default:
				declaring[d.Name.Name] = append(declaring[d.Name.Name], i)
			}
		case *ast.GenDecl:
			g.step[i] = d.Tok == token.VAR
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					declaring[s.Name.Name] = append(declaring[s.Name.Name], i)
				case *ast.ValueSpec:
					for _, n := range s.Names {
						declaring[n.Name] = append(declaring[n.Name], i)
					}
				}
			}
		}
	}
	for i, d := range decls {
		seen := map[int]bool{i: true}
		add := func(j int) {
			if !seen[j] {
				seen[j] = true
				g.uses[i] = append(g.uses[i], j)
			}
		}
		ast.Inspect(d, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				for _, j := range declaring[id.Name] {
					add(j)
				}
			}
			return true
		})
		// A type is used with its methods (interfaces it satisfies, method
		// values): it shares their cell.
		if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.TYPE {
			for _, s := range gd.Specs {
				for _, m := range methods[s.(*ast.TypeSpec).Name.Name] {
					add(m)
				}
			}
		}
	}
	// Go runs the init functions, in order, after every package-level
	// variable is initialized, and main after them.
	for k, i := range inits {
		for j := range decls {
			if j != mainDecl && (!slices.Contains(inits, j) || slices.Index(inits, j) < k) && j != i {
				g.uses[i] = append(g.uses[i], j)
			}
		}
	}
	if mainDecl >= 0 {
		for j := range decls {
			if j != mainDecl {
				g.uses[mainDecl] = append(g.uses[mainDecl], j)
			}
		}
	}
	return g
}

// order returns the strongly connected components (each in source order)
// so that every component comes after the ones it uses. Components that
// run code when their cell runs (variables, init, main) are the steps of
// Go's package initialization, taken as Go takes them: the earliest in
// source order whose steps it depends on, directly or through functions,
// are done. The functions, types and constants a step uses come just
// before it; those no step uses, at the end in source order.
func (g *declGraph) order() [][]int {
	comp := g.components()
	nc := 0
	for _, c := range comp {
		nc = max(nc, c+1)
	}
	members := make([][]int, nc)
	step := make([]bool, nc)
	for i, c := range comp {
		members[c] = append(members[c], i)
		step[c] = step[c] || g.step[i]
	}
	deps := make([][]int, nc) // component → components it uses, earliest first
	for i, us := range g.uses {
		for _, j := range us {
			if comp[i] != comp[j] && !slices.Contains(deps[comp[i]], comp[j]) {
				deps[comp[i]] = append(deps[comp[i]], comp[j])
			}
		}
	}
	for c := range deps {
		slices.SortFunc(deps[c], func(a, b int) int { return members[a][0] - members[b][0] })
	}
	byFirst := make([]int, nc)
	for c := range byFirst {
		byFirst[c] = c
	}
	slices.SortFunc(byFirst, func(a, b int) int { return members[a][0] - members[b][0] })

	done := make([]bool, nc)
	var out [][]int
	var emit func(c int)
	emit = func(c int) {
		if done[c] {
			return
		}
		done[c] = true
		for _, d := range deps[c] {
			emit(d)
		}
		out = append(out, members[c])
	}
	// ready: every step c reaches through non-step components is done.
	ready := func(c int) bool {
		seen := make([]bool, nc)
		var walk func(c int) bool
		walk = func(c int) bool {
			for _, d := range deps[c] {
				if seen[d] || done[d] {
					continue
				}
				seen[d] = true
				if step[d] || !walk(d) {
					return false
				}
			}
			return true
		}
		return walk(c)
	}
	for {
		next := -1
		for _, c := range byFirst {
			if step[c] && !done[c] && ready(c) {
				next = c
				break
			}
		}
		if next < 0 {
			break
		}
		emit(next)
	}
	for _, c := range byFirst {
		emit(c)
	}
	return out
}

// components is Tarjan's algorithm: the component number of each node.
func (g *declGraph) components() []int {
	index := make([]int, g.n)
	low := make([]int, g.n)
	onStack := make([]bool, g.n)
	comp := make([]int, g.n)
	for i := range index {
		index[i] = -1
	}
	var stack []int
	next, ncomp := 0, 0
	var visit func(v int)
	visit = func(v int) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range g.uses[v] {
			if index[w] < 0 {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp[w] = ncomp
				if w == v {
					break
				}
			}
			ncomp++
		}
	}
	for v := 0; v < g.n; v++ {
		if index[v] < 0 {
			visit(v)
		}
	}
	return comp
}
