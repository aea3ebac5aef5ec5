// Package autoimport finds the package a cell means by a name it uses
// without importing it (strings.Split, backends.New, tensors.FromValue),
// as GoNB's goimports does: among the standard library's packages and the
// packages of the session's modules, those with that name that declare
// every member the cell selects from it.
//
// Candidates are ranked in two tiers: the standard library, the packages
// the kernel links, and the modules cells already imported from (goaccel
// itself among them) first; then the other modules of the session's build
// list. The first tier with candidates decides: one candidate is the
// answer; several are an error that lists them (never a silent pick),
// except among standard packages, where the kernel's preference decides
// (math/rand over crypto/rand), and, for ResolveIn, where only one comes
// from a module the cell imports other packages from, as goimports does.
//
// A module's packages are indexed once per module version (its directory
// in the module cache does not change) and cached on disk.
package autoimport

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/scanner"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Module is a module of the session's build list.
type Module struct {
	Path, Version, Dir string
}

// Resolver resolves package names. Its fields are set once; Resolve is
// safe for concurrent use.
type Resolver struct {
	// GoRoot is the toolchain's GOROOT (the standard library's source).
	GoRoot string
	// Preferred is the kernel's own choice for a name ("" for none): the
	// standard package it prefers, or a package linked into the kernel.
	Preferred func(name string) string
	// Modules lists the session's build list.
	Modules func(ctx context.Context) ([]Module, error)
	// Loaded reports the modules cells imported packages from (module
	// path → true).
	Loaded func() map[string]bool
	// CacheDir holds the module indexes ("" for no disk cache).
	CacheDir string

	mu      sync.Mutex
	std     map[string][]string // name → import paths
	stdOnce sync.Once
	mods    map[string]*modIndex // module@version → index
	exports map[string]map[string]bool
}

// AmbiguousError is a name several packages could be.
type AmbiguousError struct {
	Name       string
	Candidates []string
}

func (e *AmbiguousError) Error() string {
	q := make([]string, len(e.Candidates))
	for i, c := range e.Candidates {
		q[i] = fmt.Sprintf("%q", c)
	}
	return fmt.Sprintf("%s is not imported, and several packages are named %s: %s; import the one you mean",
		e.Name, e.Name, strings.Join(q, ", "))
}

// Selectors returns the members a cell's source selects from name
// (name.Member), sorted, without duplicates.
func Selectors(src, name string) []string {
	re := regexp.MustCompile(`(?:^|[^\p{L}\p{N}_.])` + regexp.QuoteMeta(name) + `\s*\.\s*([\p{L}_][\p{L}\p{N}_]*)`)
	seen := map[string]bool{}
	for _, m := range re.FindAllStringSubmatch(src, -1) {
		seen[m[1]] = true
	}
	var out []string
	for s := range seen {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// Resolve returns the import path a cell means by name, given the members
// it selects from it; "" when no package fits; an *AmbiguousError when
// several do.
func (r *Resolver) Resolve(ctx context.Context, name string, selectors []string) (string, error) {
	return r.resolve(ctx, name, selectors, nil)
}

// ResolveIn is Resolve for a name a cell's source uses: where several
// packages of a tier fit, the one from a module the cell imports other
// packages from is the answer when it is the only such one (as goimports
// ranks the notebook's direct dependencies above their own dependencies).
func (r *Resolver) ResolveIn(ctx context.Context, name, src string) (string, error) {
	return r.resolve(ctx, name, Selectors(src, name), Imports(src))
}

// Imports returns the import paths of the import declarations in a cell's
// source; lines that are not Go (%%, !, %cmd) are skipped by the scanner.
func Imports(src string) []string {
	fset := token.NewFileSet()
	var s scanner.Scanner
	s.Init(fset.AddFile("", -1, len(src)), []byte(src), func(token.Position, string) {}, 0)
	var out []string
	next := func() (token.Token, string) {
		_, tok, lit := s.Scan()
		return tok, lit
	}
	for {
		tok, _ := next()
		if tok == token.EOF {
			return out
		}
		if tok != token.IMPORT {
			continue
		}
		tok, lit := next()
		group := tok == token.LPAREN
		for {
			if group {
				tok, lit = next()
			}
			if tok == token.IDENT || tok == token.PERIOD {
				tok, lit = next()
			}
			if tok == token.STRING {
				if p, err := strconv.Unquote(lit); err == nil {
					out = append(out, p)
				}
			}
			if !group || tok == token.RPAREN || tok == token.EOF {
				break
			}
		}
	}
}

func (r *Resolver) resolve(ctx context.Context, name string, selectors, imports []string) (string, error) {
	r.stdOnce.Do(r.indexStd)
	var tier1 []string
	seen := map[string]bool{}
	near := map[string]bool{} // candidates from a module the cell imports from
	add := func(tier *[]string, path, dir string) {
		if seen[path] || !r.declares(dir, selectors) {
			return
		}
		seen[path] = true
		*tier = append(*tier, path)
	}
	addMod := func(tier *[]string, m Module, path, dir string) {
		add(tier, path, dir)
		for _, imp := range imports {
			if isPrefix(m.Path, imp) && seen[path] {
				near[path] = true
			}
		}
	}
	for _, p := range r.std[name] {
		add(&tier1, p, filepath.Join(r.GoRoot, "src", p))
	}
	preferred := ""
	if r.Preferred != nil {
		preferred = r.Preferred(name)
	}
	mods, err := r.modules(ctx)
	if err != nil {
		mods = nil
	}
	loaded := map[string]bool{}
	if r.Loaded != nil {
		loaded = r.Loaded()
	}
	var rest []Module
	for _, m := range mods {
		if !loaded[m.Path] && !isPrefix(m.Path, preferred) {
			rest = append(rest, m)
			continue
		}
		for _, p := range r.index(m).Names[name] {
			addMod(&tier1, m, p.Path, filepath.Join(m.Dir, p.Rel))
		}
	}
	if preferred != "" && !seen[preferred] && !r.isStd(preferred) && len(selectors) == 0 {
		tier1 = append(tier1, preferred)
	}
	if path, err := pick(name, tier1, preferred, near, r.isStd); path != "" || err != nil {
		return path, err
	}
	var tier2 []string
	for _, m := range rest {
		for _, p := range r.index(m).Names[name] {
			addMod(&tier2, m, p.Path, filepath.Join(m.Dir, p.Rel))
		}
	}
	return pick(name, tier2, "", near, r.isStd)
}

// pick chooses among a tier's candidates: the only one, the preferred
// standard package among standard ones, or the only one near the cell.
func pick(name string, cands []string, preferred string, near map[string]bool, isStd func(string) bool) (string, error) {
	switch len(cands) {
	case 0:
		return "", nil
	case 1:
		return cands[0], nil
	}
	allStd := true
	for _, c := range cands {
		allStd = allStd && isStd(c)
	}
	if allStd {
		for _, c := range cands {
			if c == preferred {
				return c, nil
			}
		}
	}
	var mine []string
	for _, c := range cands {
		if near[c] {
			mine = append(mine, c)
		}
	}
	if len(mine) == 1 {
		return mine[0], nil
	}
	sort.Strings(cands)
	return "", &AmbiguousError{Name: name, Candidates: cands}
}

func isPrefix(module, path string) bool {
	return path != "" && (path == module || strings.HasPrefix(path, module+"/"))
}

func (r *Resolver) isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// modules lists the build list's modules that are in the module cache.
func (r *Resolver) modules(ctx context.Context) ([]Module, error) {
	if r.Modules == nil {
		return nil, nil
	}
	mods, err := r.Modules(ctx)
	if err != nil {
		return nil, err
	}
	var out []Module
	for _, m := range mods {
		if m.Dir != "" {
			out = append(out, m)
		}
	}
	return out, nil
}

// indexStd indexes the standard library's packages by name.
func (r *Resolver) indexStd() {
	r.std = map[string][]string{}
	if r.GoRoot == "" {
		return
	}
	idx := walk(filepath.Join(r.GoRoot, "src"), "", func(rel string) bool {
		first, _, _ := strings.Cut(rel, "/")
		return first == "cmd" || first == "vendor"
	})
	for name, ps := range idx.Names {
		for _, p := range ps {
			r.std[name] = append(r.std[name], p.Path)
		}
	}
}

// declares reports whether the package in dir declares every one of
// names at its top level (true when names is empty).
func (r *Resolver) declares(dir string, names []string) bool {
	if len(names) == 0 {
		return true
	}
	r.mu.Lock()
	ex, ok := r.exports[dir]
	r.mu.Unlock()
	if !ok {
		ex = exportsOf(dir)
		r.mu.Lock()
		if r.exports == nil {
			r.exports = map[string]map[string]bool{}
		}
		r.exports[dir] = ex
		r.mu.Unlock()
	}
	for _, n := range names {
		if !ex[n] {
			return false
		}
	}
	return true
}

// exportsOf lists the exported top-level names of the package in dir.
func exportsOf(dir string) map[string]bool {
	out := map[string]bool{}
	bp, err := build.Default.ImportDir(dir, 0)
	if err != nil {
		var noGo *build.NoGoError
		if !errors.As(err, &noGo) {
			return out
		}
	}
	fset := token.NewFileSet()
	for _, f := range append(append([]string{}, bp.GoFiles...), bp.CgoFiles...) {
		af, err := parser.ParseFile(fset, filepath.Join(dir, f), nil, parser.SkipObjectResolution)
		if err != nil {
			continue
		}
		for _, d := range af.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					out[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							out[s.Name.Name] = true
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								out[n.Name] = true
							}
						}
					}
				}
			}
		}
	}
	return out
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
