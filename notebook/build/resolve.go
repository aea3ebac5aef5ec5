package build

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// listed is one package of `go list -json` output.
type listed struct {
	ImportPath string
	Dir        string
	Name       string
	Export     string
	Standard   bool
	GoFiles    []string
	// Files goaccel does not compile itself (see local.go).
	CgoFiles, SFiles, CFiles, CXXFiles, MFiles, FFiles, SysoFiles, SwigFiles, SwigCXXFiles, EmbedFiles []string
	Imports                                                                                            []string
	Deps                                                                                               []string
	Module                                                                                             *listedModule
	Error                                                                                              *struct{ Err string }
	DepsErrors                                                                                         []struct{ Err string }
}

// isLocal reports whether p belongs to a local module: one replaced by a
// directory (%use, go.work), goaccel itself excepted.
func (p *listed) isLocal() bool {
	return p.Module != nil && p.Module.Path != ModulePath && p.Module.Replace != nil && p.Module.Replace.Version == "" &&
		!isSafepointLink(p.Module.Replace.Path)
}

// listFields are the fields resolving asks go list for.
const listFields = "ImportPath,Dir,Name,Export,Standard,GoFiles,CgoFiles,SFiles,CFiles,CXXFiles,MFiles,FFiles,SysoFiles,SwigFiles,SwigCXXFiles,EmbedFiles,Imports,Deps,Module,Error,DepsErrors"

func decodeListed(r io.Reader) ([]*listed, error) {
	dec := json.NewDecoder(r)
	var out []*listed
	for {
		p := new(listed)
		if err := dec.Decode(p); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("reading go list output: %w", err)
		}
		out = append(out, p)
	}
}

// ImportError says why a package cannot be imported. Err may be a
// *FetchError (its module could not be fetched) or a *ConflictError (it
// needs another version of a module the process holds).
type ImportError struct {
	Path string
	Err  error
}

func (e *ImportError) Error() string {
	msg := strings.TrimSpace(e.Err.Error())
	if strings.Contains(msg, e.Path) {
		return msg
	}
	return fmt.Sprintf("package %s: %s", e.Path, msg)
}

func (e *ImportError) Unwrap() error { return e.Err }

// Resolve makes sure the packages (and their dependencies) are built for
// plugins and known to the Builder, adding the modules that provide them to
// the session module when it lacks them (fetching them as `go get` would).
// It returns an *ImportError naming the first package that cannot be
// imported. progress, when not nil, hears what is fetched and built.
func (b *Builder) Resolve(ctx context.Context, progress func(string), paths ...string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.resolveLocked(ctx, paths, progress)
}

// ImportProblem returns why path could not be imported, if it could not.
func (b *Builder) ImportProblem(path string) *ImportError {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err, bad := b.listErrs[path]; bad {
		return &ImportError{Path: path, Err: err}
	}
	return nil
}

// known reports whether path is resolved. Callers hold b.mu.
func (b *Builder) known(path string) bool {
	if _, ok := b.local.current[path]; ok {
		return true
	}
	if b.local.paths[path] {
		return false // a local package to look at again
	}
	_, ok := b.archives[path]
	return ok
}

// archiveOf is the archive an import of path compiles against. Callers
// hold b.mu.
func (b *Builder) archiveOf(path string) string {
	return b.archives[b.local.mapped(path)]
}

func (b *Builder) resolveLocked(ctx context.Context, paths []string, progress func(string)) error {
	say := func(string) {}
	if progress != nil {
		say = progress
	}
	if err := b.ensureShared(ctx, say); err != nil {
		return err
	}
	var todo []string
	for _, p := range paths {
		if err, bad := b.listErrs[p]; bad {
			return &ImportError{Path: p, Err: err}
		}
		if !b.known(p) && p != "unsafe" && p != "C" {
			todo = append(todo, p)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	sort.Strings(todo)

	// 1. What the packages are, built for plugins. The go command adds the
	// modules providing them to the session module, fetching modules it
	// lacks at their latest version, as `go get` would.
	before := b.mod.snapshot()
	var finding []string
	var out bytes.Buffer
	names := strings.Join(todo, ", ")
	if len(todo) > 3 {
		names = strings.Join(todo[:3], ", ") + ", …"
	}
	stop := after(2*time.Second, func() {
		say("building " + names + " for compiled cells (the first time on a machine takes longer)…")
	})
	args := append([]string{"list", "-e", "-export", "-buildmode=plugin", "-deps", "-json=" + listFields}, b.mod.buildFlags()...)
	if b.wantShared {
		args = append(args, "-linkshared")
	}
	listArgs := append(append([]string(nil), args...), b.modSP.overlayFlag()...)
	err := b.mod.goCmd(ctx, &out, func(line string) {
		if p, ok := strings.CutPrefix(line, "go: finding module for package "); ok {
			if !slices.Contains(finding, p) {
				finding = append(finding, p)
				say("fetching the module that provides " + p + " (first import)…")
			}
			return
		}
		say(line)
	}, append(listArgs, todo...)...)
	stop()
	if err != nil && ctx.Err() == nil && noVersionList(err) {
		// The proxy lists no versions, so the go command cannot pick the
		// latest: take a version the session's module graph requires.
		b.mod.restore(before)
		if mod, v, ok := b.graphVersion(ctx, todo[0]); ok {
			say(fmt.Sprintf("the module proxy lists no versions of %s: taking %s, which the session's module graph requires", mod, v))
			if gerr := b.mod.get(ctx, []string{mod + "@" + v}, b.pinned(), progress); gerr == nil {
				b.modList = nil
				out.Reset()
				finding = nil
				err = b.mod.goCmd(ctx, &out, say, append(listArgs, todo...)...)
			}
		}
	}
	if err != nil {
		b.mod.restore(before)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		b.listErrs[todo[0]] = diagnose(todo[0], err)
		return &ImportError{Path: todo[0], Err: b.listErrs[todo[0]]}
	}
	pkgs, err := decodeListed(&out)
	if err != nil {
		return err
	}
	if pkgs, err = b.relistWithSafepoints(ctx, pkgs, args, todo); err != nil {
		b.mod.restore(before)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &ImportError{Path: todo[0], Err: err}
	}
	if after := b.mod.snapshot(); !bytes.Equal(after.mod, before.mod) {
		// The modules the go command found for packages of todo.
		added := map[string]string{}
		old, now := requires(string(before.mod)), requires(string(after.mod))
		for m, v := range now {
			for _, p := range finding {
				if old[m] != v && (p == m || strings.HasPrefix(p, m+"/")) {
					added[m] = v
				}
			}
		}
		what, module := "import "+strconv.Quote(todo[0]), ""
		for m := range added {
			if strings.HasPrefix(todo[0], m) {
				module = m
			}
		}
		if err := b.mod.checkVersions(ctx, what, module, b.pinned()); err != nil {
			b.mod.restore(before)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			b.listErrs[todo[0]] = err
			return &ImportError{Path: todo[0], Err: err}
		}
		b.modList = nil
		for m, v := range added {
			say(fmt.Sprintf("added %s %s to the session module (%%go mod shows it; %%go get %s@VERSION picks another version)", m, v, m))
		}
	}
	byPath := map[string]*listed{}
	for _, p := range pkgs {
		byPath[p.ImportPath] = p
		switch {
		case p.Error != nil:
			b.listErrs[p.ImportPath] = diagnose(p.ImportPath, fmt.Errorf("%s", b.mod.absPaths(p.Error.Err)))
		case len(p.DepsErrors) > 0:
			b.listErrs[p.ImportPath] = diagnose(p.ImportPath, fmt.Errorf("%s", b.mod.absPaths(p.DepsErrors[0].Err)))
		}
	}
	for _, p := range todo {
		if err, bad := b.listErrs[p]; bad {
			return &ImportError{Path: p, Err: err}
		}
	}
	b.local.classify(pkgs, byPath)

	// 2. Export data of what the go command built: all but the packages
	// of local modules goaccel compiles itself.
	for _, p := range pkgs {
		if p.Error != nil || p.Export == "" || p.isLocal() && !b.local.fallback[p.ImportPath] {
			continue
		}
		if old := b.archives[p.ImportPath]; b.local.paths[p.ImportPath] && old != "" && old != p.Export {
			// A local package the go command builds changed: the kernel
			// may hold the old one under the same path.
			b.listErrs[p.ImportPath] = fmt.Errorf("package %s changed, but it uses cgo, assembly or embedded files (or a module from elsewhere imports it), "+
				"so goaccel cannot give the new version a path of its own, and a running kernel cannot load a second version of a package: restart the kernel to use the new version", p.ImportPath)
			continue
		}
		b.archives[p.ImportPath] = p.Export
	}
	for _, p := range pkgs {
		if p.Error == nil {
			b.pkgs[p.ImportPath] = p
		}
	}

	// 3. Packages of local modules, in dependency order.
	for _, p := range pkgs {
		if p.Error != nil || !p.isLocal() {
			continue
		}
		if err := b.buildLocal(ctx, p); err != nil {
			b.listErrs[p.ImportPath] = err
		}
	}
	for _, p := range todo {
		if err, bad := b.listErrs[p]; bad {
			return &ImportError{Path: p, Err: err}
		}
		if !b.known(p) {
			b.listErrs[p] = fmt.Errorf("go list built no export data for it")
			return &ImportError{Path: p, Err: b.listErrs[p]}
		}
	}
	return nil
}

// after runs f after d unless stop is called first.
func after(d time.Duration, f func()) (stop func()) {
	t := time.AfterFunc(d, f)
	return func() { t.Stop() }
}

// Importer returns a go/types importer reading the export data of the
// packages the Builder resolves (resolving them on demand, with the
// context and progress reporting Attend set). An import of a local
// package gets its current version.
func (b *Builder) Importer(fset *token.FileSet) types.Importer {
	gc := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		b.mu.Lock()
		a, ok := b.archives[path]
		b.mu.Unlock()
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(a)
	})
	return &cellImporter{b: b, gc: gc}
}

type cellImporter struct {
	b  *Builder
	gc types.Importer
}

func (im *cellImporter) Import(path string) (*types.Package, error) {
	ctx, progress, cancel := im.b.attended()
	defer cancel()
	if err := im.b.Resolve(ctx, progress, path); err != nil {
		return nil, err
	}
	im.b.mu.Lock()
	mapped := im.b.local.mapped(path)
	im.b.mu.Unlock()
	return im.gc.Import(mapped)
}
