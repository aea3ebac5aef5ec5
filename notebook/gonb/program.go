package gonb

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/notebook/cells"
)

// Decl is a declaration of the session, as its cell wrote it.
type Decl struct {
	// Names are the names it declares ("T.M" for a method); an import's
	// local name ("." and "_" for dot and blank imports).
	Names  []string
	Source string
	Import bool
	Path   string // an import's path
}

// Program assembles a Go program (package main) from the session's
// declarations and a cell, as GoNB compiles each cell: the session's
// imports and declarations, extra declarations, then the cell's own
// (which replace the session's of the same name; the session's func main
// is not carried). Imports the program does not use are dropped (GoNB's
// goimports drops them). A statement outside func main is an error: a
// program has nowhere to run it.
// resolve, when not nil, names the package a name used without an import
// means ("" for none), as for cells.
func Program(session []Decl, cell, extra string, resolve func(name, src string) string) (string, error) {
	units := cells.Split(cell)
	var cellImports, cellDecls []string
	for _, u := range units {
		text := cell[u.Start:u.End]
		switch u.Kind {
		case cells.Import:
			cellImports = append(cellImports, text)
		case cells.Decl:
			cellDecls = append(cellDecls, text)
		case cells.Package:
		default:
			if strings.TrimSpace(stripComments(text)) != "" {
				return "", fmt.Errorf("a statement outside func main cannot be compiled into a program: %s", firstLine(text))
			}
		}
	}
	own := map[string]bool{}
	for _, d := range cellDecls {
		for _, n := range declNames(d) {
			own[n] = true
		}
	}
	var b strings.Builder
	b.WriteString("package main\n\n")
	// Imports: the cell's, then the session's not shadowed by them.
	imported := map[string]bool{}
	var importLines []string
	for _, im := range cellImports {
		for _, spec := range importSpecs(im) {
			if !imported[spec[0]+" "+spec[1]] {
				imported[spec[0]+" "+spec[1]] = true
				if spec[0] != "." && spec[0] != "_" {
					imported[spec[0]] = true
				}
				importLines = append(importLines, spec[0]+" "+strconv.Quote(spec[1]))
			}
		}
	}
	for _, d := range session {
		if !d.Import {
			continue
		}
		name := d.Names[0]
		if imported[name+" "+d.Path] || (name != "." && name != "_" && imported[name]) || own[name] {
			continue
		}
		imported[name+" "+d.Path] = true
		if name != "." && name != "_" {
			imported[name] = true
		}
		importLines = append(importLines, name+" "+strconv.Quote(d.Path))
	}
	var body strings.Builder
	for _, d := range session {
		if d.Import || overlaps(d.Names, own) || contains(d.Names, "main") {
			continue
		}
		body.WriteString(d.Source + "\n\n")
	}
	body.WriteString(extra + "\n\n")
	for _, d := range cellDecls {
		body.WriteString(d + "\n\n")
	}
	used, unresolved, parsed := usedNames(body.String())
	if resolve != nil {
		for _, name := range unresolved {
			if imported[name] {
				continue
			}
			if p := resolve(name, body.String()); p != "" {
				imported[name] = true
				importLines = append(importLines, name+" "+strconv.Quote(p))
			}
		}
	}
	b.WriteString("import (\n")
	for _, l := range importLines {
		name, path, _ := strings.Cut(l, " ")
		p, _ := strconv.Unquote(path)
		if !parsed || name == "." || name == "_" || used[localName(name, p)] {
			b.WriteString("\t" + l + "\n")
		}
	}
	b.WriteString(")\n\n")
	b.WriteString(body.String())
	return b.String(), nil
}

// importSpecs are the (local name, path) of an import declaration's
// specs; an unnamed import's name is its path's last element.
func importSpecs(src string) [][2]string {
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+src, parser.ImportsOnly)
	if err != nil {
		return nil
	}
	var out [][2]string
	for _, is := range f.Imports {
		p, _ := strconv.Unquote(is.Path.Value)
		name := ""
		if is.Name != nil {
			name = is.Name.Name
		}
		out = append(out, [2]string{localName(name, p), p})
	}
	return out
}

// localName is the name an import binds: its own, or the path's last
// element (without a go- prefix or a major version suffix).
func localName(name, path string) string {
	if name != "" {
		return name
	}
	parts := strings.Split(path, "/")
	last := parts[len(parts)-1]
	if len(parts) > 1 && len(last) > 1 && last[0] == 'v' && strings.Trim(last[1:], "0123456789") == "" {
		last = parts[len(parts)-2]
	}
	last = strings.TrimPrefix(last, "go-")
	return strings.ReplaceAll(last, "-", "_")
}

// declNames are the names a declaration declares ("T.M" for a method).
func declNames(src string) []string {
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+src, parser.SkipObjectResolution)
	if err != nil {
		return nil
	}
	var out []string
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv != nil && len(d.Recv.List) == 1 {
				out = append(out, recvName(d.Recv.List[0].Type)+"."+d.Name.Name)
			} else {
				out = append(out, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					out = append(out, s.Name.Name)
				case *ast.ValueSpec:
					for _, n := range s.Names {
						out = append(out, n.Name)
					}
				}
			}
		}
	}
	return out
}

func recvName(t ast.Expr) string {
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.ParenExpr:
			t = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// usedNames are the identifiers used as the left side of a selector
// (pkg.Name) in src, a list of declarations, and those of them src does
// not declare (packages it may need imported); false when src does not
// parse (every import is kept then: the compiler says what is wrong).
func usedNames(src string) (map[string]bool, []string, bool) {
	used := map[string]bool{}
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+src, 0)
	if err != nil {
		return nil, nil, false
	}
	unresolvedIDs := map[*ast.Ident]bool{}
	for _, id := range f.Unresolved {
		unresolvedIDs[id] = true
	}
	var unresolved []string
	seen := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if se, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := se.X.(*ast.Ident); ok {
				used[id.Name] = true
				if unresolvedIDs[id] && !seen[id.Name] {
					seen[id.Name] = true
					unresolved = append(unresolved, id.Name)
				}
			}
		}
		return true
	})
	return used, unresolved, true
}

func overlaps(names []string, set map[string]bool) bool {
	for _, n := range names {
		if set[n] {
			return true
		}
	}
	return false
}

func contains(names []string, n string) bool {
	for _, x := range names {
		if x == n {
			return true
		}
	}
	return false
}

func stripComments(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if i := strings.Index(l, "//"); i >= 0 {
			l = l[:i]
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}
