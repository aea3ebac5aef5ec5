package complete

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/build"
	"go/doc"
	"go/doc/comment"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/goaccel/goaccel/notebook/cells"
)

// member is one exported name of a package, or a method ("T.M").
type member struct {
	Name      string // "Split", or "M" for a method
	Recv      string // receiver type name for methods
	Kind      string // "func", "type", "var", "const", "method"
	Signature string // one line where possible: "func Split(s, sep string) []string"
	Decl      string // full declaration without body (types: fields and methods)
	Doc       string // doc comment as plain text
	file      string // source file and byte range of the declaration, if known
	start     int
	end       int
}

// source reads the declaration's source (with body) from its file.
func (m *member) source() string {
	if m.file == "" {
		return ""
	}
	b, err := os.ReadFile(m.file)
	if err != nil || m.end > len(b) || m.start >= m.end {
		return ""
	}
	return string(b[m.start:m.end])
}

// pkgAPI is the exported API of one package.
type pkgAPI struct {
	Path, Name string
	Doc        string
	Members    []*member          // package-level names, sorted
	byName     map[string]*member // package-level names and "T.M" methods
	methods    map[string][]*member
}

// apiCache holds one entry per import path. It is the package's only mutable
// global state besides typesCache: guarded by its mutex, entries are added
// once and never change (each entry loads under its own sync.Once, so that a
// slow package does not hold up others).
var apiCache = struct {
	sync.Mutex
	m map[string]*apiEntry
}{m: map[string]*apiEntry{}}

type apiEntry struct {
	once sync.Once
	api  *pkgAPI
}

// loadAPI returns the API of the package at path, or nil. syms may supply
// reflection symbols for packages not in the standard library.
func loadAPI(path string, syms map[string]map[string]reflect.Value) *pkgAPI {
	apiCache.Lock()
	e := apiCache.m[path]
	if e == nil {
		e = &apiEntry{}
		apiCache.m[path] = e
	}
	apiCache.Unlock()
	e.once.Do(func() {
		defer func() { _ = recover() }()
		e.api = loadFromSource(path)
		if e.api == nil {
			e.api = loadFromSymbols(path, syms)
		}
	})
	if e.api == nil && syms != nil {
		// Not cached: the symbols depend on the scope.
		return loadFromSymbols(path, syms)
	}
	return e.api
}

// symbolsOf returns the symbol table of path in tables (nil if none).
func symbolsOf(path string, tables map[string]map[string]reflect.Value) map[string]reflect.Value {
	for k, v := range tables {
		if i := strings.LastIndexByte(k, '/'); i > 0 && k[:i] == path {
			return v
		}
	}
	return nil
}

// standardPackages maps the import paths of the standard library under
// GOROOT to their package names: what cells can import besides modules.
// Read once from the source tree (the toolchain cells are built with).
var standardPackages = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	root := filepath.Join(build.Default.GOROOT, "src")
	fset := token.NewFileSet()
	// One walk: a directory is skipped where no importable package can be
	// (its parents were checked on the way down); a package's name is read
	// from its first non-test file that is not package main.
	_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			switch name := d.Name(); {
			case name == "internal", name == "vendor", name == "testdata", path == filepath.Join(root, "cmd"):
				return filepath.SkipDir
			}
			return nil
		}
		n := d.Name()
		if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		if _, done := m[rel]; done || rel == "." {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.PackageClauseOnly)
		if err != nil || f.Name.Name == "main" || f.Name.Name == "documentation" {
			return nil
		}
		m[rel] = f.Name.Name
		return nil
	})
	return m
})

// importablePaths maps what cells can import to package names: the
// standard library and the packages of the scope's symbol tables.
func importablePaths(extra map[string]map[string]reflect.Value) map[string]string {
	std := standardPackages()
	if len(extra) == 0 {
		return std
	}
	m := make(map[string]string, len(std)+len(extra))
	for k, v := range std {
		m[k] = v
	}
	for k := range extra {
		if i := strings.LastIndexByte(k, '/'); i > 0 && !strings.HasPrefix(k, "github.com/traefik/yaegi") {
			m[k[:i]] = k[i+1:]
		}
	}
	return m
}

var printCfg = printer.Config{Mode: printer.UseSpaces | printer.TabIndent, Tabwidth: 8}

func nodeString(fset *token.FileSet, n any) string {
	var b bytes.Buffer
	if err := printCfg.Fprint(&b, fset, n); err != nil {
		return ""
	}
	return b.String()
}

// docText renders a doc comment as plain text.
func docText(text string) string {
	if text == "" {
		return ""
	}
	var p comment.Parser
	pr := comment.Printer{TextWidth: 80}
	return strings.TrimRight(string(pr.Text(p.Parse(text))), "\n")
}

// docMarkdown renders a doc comment as Markdown.
func docMarkdown(text string) string {
	if text == "" {
		return ""
	}
	var p comment.Parser
	var pr comment.Printer
	return strings.TrimRight(string(pr.Markdown(p.Parse(text))), "\n")
}

// loadFromSource reads the package's source under GOROOT with go/doc.
func loadFromSource(path string) *pkgAPI {
	ctx := build.Default
	if ctx.GOROOT == "" {
		return nil
	}
	dir := filepath.Join(ctx.GOROOT, "src", filepath.FromSlash(path))
	bp, err := ctx.ImportDir(dir, 0)
	if err != nil || len(bp.GoFiles) == 0 {
		return nil
	}
	fset := token.NewFileSet()
	type rng struct {
		file       string
		start, end int
	}
	ranges := map[string]rng{}
	var files []*ast.File
	for _, name := range bp.GoFiles {
		fn := filepath.Join(dir, name)
		f, err := parser.ParseFile(fset, fn, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			continue
		}
		files = append(files, f)
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			key := fd.Name.Name
			if r := cells.ReceiverType(fd); r != "" {
				key = r + "." + key
			}
			ranges[key] = rng{fn, fset.Position(fd.Pos()).Offset, fset.Position(fd.End()).Offset}
		}
	}
	if len(files) == 0 {
		return nil
	}
	mode := doc.Mode(0)
	if path == "builtin" {
		mode = doc.AllDecls
	}
	dp, err := doc.NewFromFiles(fset, files, path, mode)
	if err != nil {
		return nil
	}
	api := &pkgAPI{Path: path, Name: dp.Name, Doc: dp.Doc, byName: map[string]*member{}, methods: map[string][]*member{}}
	addFunc := func(f *doc.Func, recv string) {
		fd := *f.Decl
		fd.Doc, fd.Body = nil, nil
		m := &member{Name: f.Name, Kind: "func", Doc: f.Doc}
		m.Signature = nodeString(fset, &fd)
		m.Decl = m.Signature
		key := f.Name
		if recv != "" {
			m.Kind, m.Recv = "method", recv
			key = recv + "." + f.Name
			api.methods[recv] = append(api.methods[recv], m)
		} else {
			api.Members = append(api.Members, m)
		}
		if r, ok := ranges[key]; ok {
			m.file, m.start, m.end = r.file, r.start, r.end
		}
		api.byName[key] = m
	}
	addValues := func(vs []*doc.Value) {
		for _, v := range vs {
			for _, spec := range v.Decl.Specs {
				s, ok := spec.(*ast.ValueSpec)
				if !ok {
					continue
				}
				for _, id := range s.Names {
					if !id.IsExported() && path != "builtin" {
						continue
					}
					cp := *s
					cp.Doc, cp.Comment = nil, nil
					m := &member{Name: id.Name, Kind: v.Decl.Tok.String(), Doc: v.Doc}
					if s.Doc != nil {
						m.Doc = s.Doc.Text()
					}
					m.Signature = oneLine(v.Decl.Tok.String() + " " + nodeString(fset, &cp))
					m.Decl = nodeString(fset, v.Decl)
					if len(v.Decl.Specs) > 1 {
						m.Decl = m.Signature
					}
					api.Members = append(api.Members, m)
					api.byName[id.Name] = m
				}
			}
		}
	}
	for _, f := range dp.Funcs {
		addFunc(f, "")
	}
	addValues(dp.Consts)
	addValues(dp.Vars)
	for _, t := range dp.Types {
		m := &member{Name: t.Name, Kind: "type", Doc: t.Doc}
		m.Decl = nodeString(fset, t.Decl)
		if len(t.Decl.Specs) == 1 {
			if ts, ok := t.Decl.Specs[0].(*ast.TypeSpec); ok {
				m.Signature = typeSignature(fset, ts)
				pos := fset.Position(t.Decl.Pos())
				m.file, m.start, m.end = pos.Filename, pos.Offset, fset.Position(t.Decl.End()).Offset
			}
		}
		api.Members = append(api.Members, m)
		api.byName[t.Name] = m
		for _, f := range t.Funcs {
			addFunc(f, "")
		}
		for _, f := range t.Methods {
			addFunc(f, t.Name)
		}
		addValues(t.Consts)
		addValues(t.Vars)
	}
	sort.Slice(api.Members, func(i, j int) bool { return api.Members[i].Name < api.Members[j].Name })
	return api
}

// typeSignature is a one-line summary: "type Builder struct",
// "type Duration int64", "type Stringer interface".
func typeSignature(fset *token.FileSet, ts *ast.TypeSpec) string {
	cp := *ts
	cp.Doc, cp.Comment = nil, nil
	switch ts.Type.(type) {
	case *ast.StructType:
		cp.Type = ast.NewIdent("struct")
	case *ast.InterfaceType:
		cp.Type = ast.NewIdent("interface")
	}
	return oneLine("type " + nodeString(fset, &cp))
}

// oneLine collapses whitespace runs that contain newlines.
func oneLine(s string) string {
	if !strings.Contains(s, "\n") {
		return s
	}
	f := strings.Fields(s)
	return strings.Join(f, " ")
}

// loadFromSymbols builds an API by reflection from the interpreter's symbol
// table: names, kinds and signatures, no docs.
func loadFromSymbols(path string, extra map[string]map[string]reflect.Value) *pkgAPI {
	syms := symbolsOf(path, extra)
	if syms == nil {
		return nil
	}
	name := importablePaths(extra)[path]
	api := &pkgAPI{Path: path, Name: name, byName: map[string]*member{}, methods: map[string][]*member{}}
	for n, v := range syms {
		if !token.IsExported(n) || !v.IsValid() {
			continue
		}
		m := &member{Name: n}
		t := v.Type()
		switch {
		case t.Kind() == reflect.Pointer && v.IsNil() && t.Elem().Name() == n:
			et := t.Elem()
			m.Kind = "type"
			m.Signature = "type " + n + " " + kindWord(et)
			m.Decl = m.Signature
			for _, mt := range []reflect.Type{et, t} {
				for i := 0; i < mt.NumMethod(); i++ {
					meth := mt.Method(i)
					key := n + "." + meth.Name
					if api.byName[key] != nil {
						continue
					}
					recv := n
					if mt == t {
						recv = "*" + n
					}
					mm := &member{Name: meth.Name, Recv: n, Kind: "method"}
					sig := strings.TrimPrefix(meth.Type.String(), "func(")
					// Drop the receiver parameter.
					if i := strings.IndexAny(sig, ",)"); i >= 0 {
						sig = strings.TrimPrefix(sig[i+1:], " ")
					}
					mm.Signature = "func (" + recv + ") " + meth.Name + "(" + sig
					mm.Decl = mm.Signature
					api.byName[key] = mm
					api.methods[n] = append(api.methods[n], mm)
				}
			}
		case t.Kind() == reflect.Func && !v.CanAddr():
			m.Kind = "func"
			m.Signature = "func " + n + strings.TrimPrefix(t.String(), "func")
		case v.CanAddr():
			m.Kind = "var"
			m.Signature = "var " + n + " " + t.String()
		default:
			m.Kind = "const"
			if v.CanInterface() {
				m.Signature = fmt.Sprintf("const %s = %v", n, v.Interface())
			} else {
				m.Signature = "const " + n
			}
		}
		if m.Decl == "" {
			m.Decl = m.Signature
		}
		api.Members = append(api.Members, m)
		api.byName[n] = m
	}
	sort.Slice(api.Members, func(i, j int) bool { return api.Members[i].Name < api.Members[j].Name })
	return api
}

func kindWord(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Struct:
		return "struct"
	case reflect.Interface:
		return "interface"
	}
	return t.String()
}
