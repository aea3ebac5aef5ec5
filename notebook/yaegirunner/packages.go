package yaegirunner

import (
	"reflect"
	"strings"
	"sync"

	"github.com/traefik/yaegi/stdlib"
	"github.com/traefik/yaegi/stdlib/unrestricted"

	"github.com/goaccel/goaccel/display"
	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/input"
)

// Packages are the compiled packages linked into the kernel that cells may
// import, as yaegi's symbol tables hold them (import path/name → symbol →
// value): the standard library, goaccel's cell-facing packages and the
// extra tables the kernel links (package symbols). The interpreter uses
// them as they are; compiled cells' evaluator (package eval) calls them,
// and resolves the package names cells use without importing them here.
type Packages struct {
	extra   []map[string]map[string]reflect.Value
	pkgName map[string]string                   // import path → package name
	symtab  map[string]map[string]reflect.Value // import path → symbols

	autoOnce   sync.Once         // builds autoByName
	autoByName map[string]string // package name → path, for auto-import
}

// NewPackages indexes the standard library, goaccel's cell-facing packages
// and extra.
func NewPackages(extra []map[string]map[string]reflect.Value) *Packages {
	p := &Packages{extra: extra, pkgName: map[string]string{}, symtab: map[string]map[string]reflect.Value{}}
	for _, t := range p.interpreted() {
		for k, syms := range t {
			if i := strings.LastIndex(k, "/"); i > 0 {
				p.pkgName[k[:i]] = k[i+1:]
				if p.symtab[k[:i]] == nil {
					p.symtab[k[:i]] = map[string]reflect.Value{}
				}
				for n, v := range syms {
					p.symtab[k[:i]][n] = v
				}
			}
		}
	}
	return p
}

// interpreted are the tables the interpreter uses. stdlib.Symbols is the
// restricted standard library: os.Exit and log.Fatal panic instead of
// exiting. Only os/exec comes from the unrestricted table (it would bring
// back the real os.Exit).
func (p *Packages) interpreted() []map[string]map[string]reflect.Value {
	tables := []map[string]map[string]reflect.Value{
		stdlib.Symbols,
		{"os/exec/exec": unrestricted.Symbols["os/exec/exec"]},
		cellPackages(),
	}
	return append(tables, p.extra...)
}

// Linked are the packages linked into the kernel that evaluated cells
// call, by import path: the real functions (the unrestricted os.Exit and
// log.Fatal, not the interpreter's stand-ins; evaluated cells do not call
// those anyway), never an interpreter's hooks.
func (p *Packages) Linked() map[string]map[string]reflect.Value {
	out := map[string]map[string]reflect.Value{}
	tables := []map[string]map[string]reflect.Value{stdlib.Symbols, unrestricted.Symbols, cellPackages()}
	tables = append(tables, p.extra...)
	for _, t := range tables {
		for key, syms := range t {
			i := strings.LastIndex(key, "/")
			if i <= 0 {
				continue
			}
			path := key[:i]
			if out[path] == nil {
				out[path] = map[string]reflect.Value{}
			}
			for name, v := range syms {
				out[path][name] = v
			}
		}
	}
	return out
}

// CellFacing are the standard library's tables, goaccel's cell-facing
// packages and the extra tables, for completion and inspection (package
// complete reads the standard library from GOROOT's source and takes the
// names from these tables where that source is missing).
func (p *Packages) CellFacing() map[string]map[string]reflect.Value {
	out := map[string]map[string]reflect.Value{}
	for k, v := range stdlib.Symbols {
		out[k] = v
	}
	for k, v := range cellPackages() {
		out[k] = v
	}
	for _, t := range p.extra {
		for k, v := range t {
			out[k] = v
		}
	}
	return out
}

// AutoImport resolves a package name a cell uses without importing it
// ("" when no package has that name).
func (p *Packages) AutoImport(name string) string {
	if path, ok := preferredImport[name]; ok {
		return path
	}
	return p.importable()[name]
}

// name is the package name of the package at path, as the tables have it.
func (p *Packages) name(path string) (string, bool) {
	n, ok := p.pkgName[path]
	return n, ok
}

// symbol is a symbol of the package at path (invalid when there is none).
func (p *Packages) symbol(path, name string) reflect.Value { return p.symtab[path][name] }

// symbols are the symbols of the package at path.
func (p *Packages) symbols(path string) map[string]reflect.Value { return p.symtab[path] }

// preferredImport resolves package names that several standard packages
// share.
var preferredImport = map[string]string{
	"rand":     "math/rand",
	"template": "text/template",
	"scanner":  "text/scanner",
	"pprof":    "runtime/pprof",
	"parser":   "go/parser",
	"big":      "math/big",
	"cmplx":    "math/cmplx",
}

// importable maps a package name to the import path auto-import uses for
// it. It depends only on the symbol tables, so it is computed once.
func (pk *Packages) importable() map[string]string {
	pk.autoOnce.Do(func() {
		byName := map[string]string{}
		for p, n := range pk.pkgName {
			if strings.HasPrefix(p, rtPath) || strings.Contains(p, "internal") {
				continue
			}
			if old, ok := byName[n]; ok {
				if pref, ok := preferredImport[n]; ok {
					byName[n] = pref
					continue
				}
				if len(old) < len(p) || (len(old) == len(p) && old < p) {
					continue
				}
			}
			byName[n] = p
		}
		pk.autoByName = byName
	})
	return pk.autoByName
}

// cellPackages are goaccel's cell-facing packages (written by hand in the
// shape `yaegi extract` produces).
func cellPackages() map[string]map[string]reflect.Value {
	return map[string]map[string]reflect.Value{
		"github.com/goaccel/goaccel/display/display": {
			"ClearOutput":         reflect.ValueOf(display.ClearOutput),
			"Display":             reflect.ValueOf(display.Display),
			"DisplayWithMetadata": reflect.ValueOf(display.DisplayWithMetadata),
			"HTML":                reflect.ValueOf(display.HTML),
			"Image":               reflect.ValueOf(display.Image),
			"ImageBundle":         reflect.ValueOf(display.ImageBundle),
			"JPEG":                reflect.ValueOf(display.JPEG),
			"JSON":                reflect.ValueOf(display.JSON),
			"JavaScript":          reflect.ValueOf(display.JavaScript),
			"LaTeX":               reflect.ValueOf(display.LaTeX),
			"Markdown":            reflect.ValueOf(display.Markdown),
			"NewProgress":         reflect.ValueOf(display.NewProgress),
			"PNG":                 reflect.ValueOf(display.PNG),
			"SVG":                 reflect.ValueOf(display.SVG),
			"Table":               reflect.ValueOf(display.Table),
			"Text":                reflect.ValueOf(display.Text),
			"Handle":              reflect.ValueOf((*display.Handle)(nil)),
			"Progress":            reflect.ValueOf((*display.Progress)(nil)),
		},
		"github.com/goaccel/goaccel/frontend/frontend": {
			"MIMEBundle": reflect.ValueOf((*frontend.MIMEBundle)(nil)),
		},
		"github.com/goaccel/goaccel/input/input": {
			"Line":        reflect.ValueOf(input.Line),
			"Password":    reflect.ValueOf(input.Password),
			"ErrNoSource": reflect.ValueOf(&input.ErrNoSource).Elem(),
		},
	}
}
