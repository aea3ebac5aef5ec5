package build

// Packages of local modules (%use DIR, a notebook's go.work) change while
// the kernel runs, and a Go process cannot load a second version of a
// package under the same path: plugin.Open refuses it ("plugin was built
// with a different version of package ..."). So goaccel compiles a local
// package itself, under a path of its own for each version of its content:
// example.com/mylib~1, after an edit example.com/mylib~2. Imports written
// as example.com/mylib go to the current version (importmap lines in the
// compiler's import configuration, as the go command does for vendored
// packages); values of earlier cells keep the types of the version they
// were made with. The version is part of the path that stack traces and
// reflect show (example.com/mylib~2.F).
//
// What goaccel cannot compile itself (cgo, assembly, embedded files; local
// packages that modules from elsewhere import) the go command builds under
// the plain path; such a package cannot change while the kernel runs.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/goaccel/goaccel/notebook/safepoint"
)

// localState is what the Builder knows about packages of local modules.
type localState struct {
	// current maps the import path of a local package resolved since the
	// last %use to the path of its current version.
	current map[string]string
	// paths are the import paths of every local package seen.
	paths map[string]bool
	// fallback are the local packages the go command builds.
	fallback map[string]bool
	// versions maps a local package's import path and content key to the
	// path that version was given.
	versions map[string]map[string]string
}

func newLocalState() localState {
	return localState{current: map[string]string{}, paths: map[string]bool{}, fallback: map[string]bool{}, versions: map[string]map[string]string{}}
}

// mapped is the package path an import of path compiles against.
func (l *localState) mapped(path string) string {
	if m, ok := l.current[path]; ok {
		return m
	}
	return path
}

// versionPath is the path of the version of path with content key.
func (l *localState) versionPath(path, key string) string {
	if l.versions[path] == nil {
		l.versions[path] = map[string]string{}
	}
	m, ok := l.versions[path][key]
	if !ok {
		m = fmt.Sprintf("%s~%d", path, len(l.versions[path])+1)
		l.versions[path][key] = m
	}
	return m
}

// importmap sends imports of local packages to their current versions.
func (l *localState) importmap() []byte {
	var lines []string
	for p, m := range l.current {
		if p != m {
			lines = append(lines, fmt.Sprintf("importmap %s=%s\n", p, m))
		}
	}
	sort.Strings(lines)
	return []byte(strings.Join(lines, ""))
}

// pure reports whether goaccel can compile p itself: Go files only.
func (p *listed) pure() bool {
	for _, files := range [][]string{p.CgoFiles, p.SFiles, p.CFiles, p.CXXFiles, p.MFiles, p.FFiles, p.SysoFiles, p.SwigFiles, p.SwigCXXFiles, p.EmbedFiles} {
		if len(files) > 0 {
			return false
		}
	}
	return true
}

// classify records the local packages among pkgs and which of them the go
// command must build: those goaccel cannot compile, and every local
// package that one of those or a package from elsewhere imports (the go
// command compiles an importer against its own build of the imported
// package).
func (l *localState) classify(pkgs []*listed, byPath map[string]*listed) {
	for _, p := range pkgs {
		if p.Error != nil || p.Standard {
			continue
		}
		if p.isLocal() {
			l.paths[p.ImportPath] = true
			if p.pure() {
				continue
			}
			l.fallback[p.ImportPath] = true
		}
		for _, d := range p.Deps {
			if q := byPath[d]; q != nil && q.isLocal() {
				l.fallback[d] = true
			}
		}
	}
}

// buildLocal compiles the local package p (its local imports are done)
// under the path of its current version, or takes it from the cache.
// Callers hold b.mu.
func (b *Builder) buildLocal(ctx context.Context, p *listed) error {
	if b.local.fallback[p.ImportPath] {
		if _, ok := b.archives[p.ImportPath]; ok {
			b.local.current[p.ImportPath] = p.ImportPath
		}
		return nil
	}
	if _, ok := b.local.current[p.ImportPath]; ok {
		return nil
	}
	where := fmt.Sprintf("%s (local module %s in %s)", p.ImportPath, p.Module.Path, p.Module.Dir)
	lang := "go1.16" // a go.mod without a go line
	if p.Module.GoVersion != "" {
		lang = langVersion("go" + p.Module.GoVersion)
	}
	h := sha256.New()
	fmt.Fprintf(h, "goaccel local v1\x00%s\x00%s\x00%s\x00%s\x00%s\x00%v\x00%s\x00%s\x00",
		b.tc.Version, b.host.GOOS, b.host.GOARCH, b.host.GOAMD64, b.host.Tags, b.host.Trimpath, p.ImportPath, lang)
	if b.lib != nil {
		fmt.Fprintf(h, "linkshared\x00")
	}
	checks, rewrite := b.wantsSafepoints(p)
	var files []string
	for _, f := range p.GoFiles {
		file := filepath.Join(p.Dir, f)
		data, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(data))
		h.Write(data)
		if file, err = b.localSafepoints(checks, rewrite, file, data); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		files = append(files, file)
	}
	fmt.Fprintf(h, "%s\x00", safepointsVersion)
	imports := append([]string(nil), p.Imports...)
	if rewrite && !slices.Contains(imports, safepoint.CheckImport) {
		// The checks' import: the archive is compiled against its export
		// data, which changes with goaccel's version.
		imports = append(imports, safepoint.CheckImport)
	}
	sort.Strings(imports)
	for _, imp := range imports {
		if imp == "unsafe" || imp == "C" {
			continue
		}
		a := b.archiveOf(imp)
		if a == "" {
			return fmt.Errorf("%s: its import %s was not built", where, imp)
		}
		fmt.Fprintf(h, "\x00%s=%s", imp, a)
	}
	key := hex.EncodeToString(h.Sum(nil)[:16])
	mapped := b.local.versionPath(p.ImportPath, key)
	sum := sha256.Sum256([]byte(key + "\x00" + mapped))
	id := hex.EncodeToString(sum[:16])
	dir := filepath.Join(b.root, "local", id[:2], id)
	archive := filepath.Join(dir, "pkg.a")
	if !fileExists(archive) {
		if err := b.compileLocal(ctx, p, files, mapped, lang, dir); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("compiling %s:\n%w", where, err)
		}
	}
	b.archives[mapped] = archive
	b.local.current[p.ImportPath] = mapped
	return nil
}

// compileLocal runs the compiler on a local package and moves its archive
// to dir.
func (b *Builder) compileLocal(ctx context.Context, p *listed, files []string, mapped, lang, dir string) error {
	if err := os.MkdirAll(filepath.Join(b.root, "sessions"), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Join(b.root, "sessions"), "local")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cfg := filepath.Join(tmp, "importcfg")
	if err := os.WriteFile(cfg, b.importcfg(true, ""), 0o644); err != nil {
		return err
	}
	archive := filepath.Join(tmp, "pkg.a")
	args := []string{"-o", archive, "-p", mapped, "-lang=" + lang, "-complete", "-installsuffix", "dynlink",
		"-goversion", b.tc.Version, "-c=2", "-dynlink", "-nolocalimports", "-importcfg", cfg, "-pack"}
	if b.lib != nil {
		args = append(args, "-linkshared")
	}
	if b.host.Trimpath {
		args = append([]string{"-trimpath", p.Dir + "=>" + p.ImportPath}, args...)
	}
	if out, err := b.tool(ctx, "compile", append(args, files...)...); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%s", strings.TrimSpace(out))
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	final, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".tmp")
	if err != nil {
		return err
	}
	if err := os.Rename(archive, filepath.Join(final, "pkg.a")); err != nil {
		return err
	}
	if err := os.Rename(final, dir); err != nil {
		// Another process compiled the same version meanwhile.
		_ = os.RemoveAll(final)
		if !fileExists(filepath.Join(dir, "pkg.a")) {
			return err
		}
	}
	return nil
}
