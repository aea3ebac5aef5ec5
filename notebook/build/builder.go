package build

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Options configure a Builder.
type Options struct {
	// CacheDir holds built cells and session modules
	// (~/.cache/goaccel/build by default).
	CacheDir string
	// Host is the configuration plugins must match (CurrentHost by
	// default).
	Host *Host
	// Toolchain is the go command to use (FindToolchain by default).
	Toolchain *Toolchain
}

// Builder builds cell packages into plugins. Its methods are safe for
// concurrent use; builds run one at a time.
type Builder struct {
	host Host
	tc   *Toolchain
	mod  *sessionModule
	root string // cache root for this toolchain and host configuration

	mu       sync.Mutex
	archives map[string]string // import path → compiled archive
	listErrs map[string]string // import path → why it cannot be imported
	cells    map[string]bool   // import paths of cell packages built here
}

// New prepares a Builder, or returns an *Unavailable saying why cells
// cannot be compiled here.
func New(ctx context.Context, opts Options) (*Builder, error) {
	var host Host
	if opts.Host != nil {
		host = *opts.Host
	} else {
		h, err := CurrentHost()
		if err != nil {
			return nil, err
		}
		host = h
	}
	tc := opts.Toolchain
	if tc == nil {
		t, err := FindToolchain(ctx)
		if err != nil {
			return nil, err
		}
		tc = t
	}
	if err := tc.Matches(host); err != nil {
		return nil, err
	}
	cache := opts.CacheDir
	if cache == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return nil, &Unavailable{"no cache directory: " + err.Error()}
		}
		cache = filepath.Join(base, "goaccel", "build")
	}
	cfg := sha256.Sum256([]byte(strings.Join([]string{tc.Version, host.GOOS, host.GOARCH, host.GOAMD64, host.Tags, fmt.Sprint(host.Trimpath), host.SourceDir}, "\x00")))
	root := filepath.Join(cache, hex.EncodeToString(cfg[:8]))
	if err := os.MkdirAll(filepath.Join(root, "sessions"), 0o755); err != nil {
		return nil, &Unavailable{"cannot create the build cache: " + err.Error()}
	}
	sdir, err := os.MkdirTemp(filepath.Join(root, "sessions"), "s")
	if err != nil {
		return nil, &Unavailable{"cannot create the session module: " + err.Error()}
	}
	mod, err := newSessionModule(sdir, tc, host)
	if err != nil {
		return nil, &Unavailable{"cannot create the session module: " + err.Error()}
	}
	return &Builder{host: host, tc: tc, mod: mod, root: root,
		archives: map[string]string{}, listErrs: map[string]string{}, cells: map[string]bool{}}, nil
}

// Close removes the session module.
func (b *Builder) Close() error { return os.RemoveAll(b.mod.dir) }

// Host returns the configuration plugins are built for.
func (b *Builder) Host() Host { return b.host }

// GoMod returns the session module's go.mod.
func (b *Builder) GoMod() (string, error) { return b.mod.goMod() }

// Get adds or pins a module (`%go get mod@version`).
func (b *Builder) Get(ctx context.Context, query string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.mod.get(ctx, query); err != nil {
		return err
	}
	b.forgetModules()
	return nil
}

// Use makes the local module in dir importable and returns its path.
func (b *Builder) Use(ctx context.Context, dir string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	path, err := b.mod.use(ctx, dir)
	if err != nil {
		return "", err
	}
	b.forgetModules()
	return path, nil
}

// forgetModules drops resolved non-standard packages, whose versions may
// have changed. Callers hold b.mu.
func (b *Builder) forgetModules() {
	for p := range b.archives {
		if !b.cells[p] && strings.Contains(strings.SplitN(p, "/", 2)[0], ".") {
			delete(b.archives, p)
		}
	}
	b.listErrs = map[string]string{}
}

// listed is one package of `go list -json` output.
type listed struct {
	ImportPath string
	Export     string
	Standard   bool
	Error      *struct{ Err string }
	DepsErrors []struct{ Err string }
}

// Resolve makes sure the packages (and their dependencies) are built for
// plugins and known to the Builder. It returns an error naming the first
// package that cannot be imported.
func (b *Builder) Resolve(ctx context.Context, paths ...string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.resolveLocked(ctx, paths)
}

func (b *Builder) resolveLocked(ctx context.Context, paths []string) error {
	var todo []string
	for _, p := range paths {
		if msg, bad := b.listErrs[p]; bad {
			return &ImportError{Path: p, Msg: msg}
		}
		if _, ok := b.archives[p]; !ok && p != "unsafe" && p != "C" {
			todo = append(todo, p)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	sort.Strings(todo)
	var out bytes.Buffer
	args := append([]string{"list", "-e", "-export", "-buildmode=plugin", "-deps", "-json=ImportPath,Export,Standard,Error,DepsErrors"}, b.mod.buildFlags()...)
	args = append(args, todo...)
	if err := b.mod.goCmd(ctx, &out, args...); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &ImportError{Path: todo[0], Msg: err.Error()}
	}
	dec := json.NewDecoder(&out)
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return fmt.Errorf("reading go list output: %w", err)
		}
		switch {
		case p.Error != nil:
			b.listErrs[p.ImportPath] = p.Error.Err
		case p.Export != "":
			b.archives[p.ImportPath] = p.Export
		}
	}
	for _, p := range todo {
		if msg, bad := b.listErrs[p]; bad {
			return &ImportError{Path: p, Msg: msg}
		}
		if _, ok := b.archives[p]; !ok {
			b.listErrs[p] = "go list built no export data for it"
			return &ImportError{Path: p, Msg: b.listErrs[p]}
		}
	}
	return nil
}

// ImportError says why a package cannot be imported.
type ImportError struct {
	Path string
	Msg  string
}

func (e *ImportError) Error() string {
	msg := strings.TrimSpace(e.Msg)
	if strings.Contains(msg, e.Path) {
		return msg
	}
	return fmt.Sprintf("package %s: %s", e.Path, msg)
}

// Importer returns a go/types importer reading the export data of the
// packages the Builder resolves (resolving them on demand).
func (b *Builder) Importer(fset *token.FileSet) types.Importer {
	return importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		if err := b.Resolve(ctx, path); err != nil {
			return nil, err
		}
		b.mu.Lock()
		a := b.archives[path]
		b.mu.Unlock()
		return os.Open(a)
	})
}

// Package is a cell package to build: one Go file of package main.
type Package struct {
	// Path is the import path, unique in the process (a plugin path can be
	// loaded once).
	Path string
	// Source is the file.
	Source []byte
	// Imports are the import paths the file imports (cell packages built
	// before included).
	Imports []string
}

// Built is a built cell package.
type Built struct {
	Path    string
	Archive string // compiled package (other cells import it)
	Plugin  string // shared object to plugin.Open
	Cached  bool   // taken from the cache
}

// CompileError is the compiler's or the linker's complaint about generated
// code.
type CompileError struct {
	Stage  string // "compile" or "link"
	Output string
}

func (e *CompileError) Error() string {
	return fmt.Sprintf("go tool %s: %s", e.Stage, strings.TrimSpace(e.Output))
}

// Build compiles pkg and links it into a plugin, or takes both from the
// cache. progress, when not nil, hears what takes time.
func (b *Builder) Build(ctx context.Context, pkg Package, progress func(string)) (*Built, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	say := func(string) {}
	if progress != nil {
		say = progress
	}
	deps := append([]string{"runtime/cgo"}, pkg.Imports...)
	var missing []string
	for _, p := range deps {
		if !b.cells[p] {
			missing = append(missing, p)
		}
	}
	start := time.Now()
	done := make(chan struct{})
	go func() { // a first build of the standard library for plugins takes a while
		select {
		case <-time.After(time.Second):
			if len(missing) > 0 {
				say("preparing packages for compiled cells (the first time takes longer)…")
			}
		case <-done:
		}
	}()
	err := b.resolveLocked(ctx, missing)
	close(done)
	if err != nil {
		return nil, err
	}
	key := b.key(pkg)
	dir := filepath.Join(b.root, "cells", key[:2], key)
	built := &Built{Path: pkg.Path, Archive: filepath.Join(dir, "pkg.a"), Plugin: filepath.Join(dir, "plugin.so")}
	if fileExists(built.Archive) && fileExists(built.Plugin) {
		built.Cached = true
		b.archives[pkg.Path] = built.Archive
		b.cells[pkg.Path] = true
		return built, nil
	}
	tmp, err := os.MkdirTemp(filepath.Join(b.root, "sessions"), "build")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "cell.go")
	if err := os.WriteFile(src, pkg.Source, 0o644); err != nil {
		return nil, err
	}
	cfg := filepath.Join(tmp, "importcfg")
	if err := os.WriteFile(cfg, b.importcfg(), 0o644); err != nil {
		return nil, err
	}
	archive := filepath.Join(tmp, "pkg.a")
	goVersion := b.tc.Version
	compile := []string{"-o", archive, "-p", pkg.Path, "-lang=" + langVersion(goVersion), "-complete",
		"-installsuffix", "dynlink", "-goversion", goVersion, "-c=2", "-dynlink", "-nolocalimports",
		"-importcfg", cfg, "-pack", src}
	if b.host.Trimpath {
		compile = append([]string{"-trimpath", tmp + "=>"}, compile...)
	}
	if out, err := b.tool(ctx, "compile", compile...); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &CompileError{Stage: "compile", Output: out}
	}
	if time.Since(start) > time.Second {
		say("linking " + pkg.Path + "…")
	}
	so := filepath.Join(tmp, "plugin.so")
	link := []string{"-o", so, "-importcfg", cfg, "-installsuffix", "dynlink", "-pluginpath", pkg.Path,
		"-buildmode=plugin", "-s", "-w", "-checklinkname=0", "-extld=" + strings.Fields(b.tc.CC)[0], archive}
	if out, err := b.tool(ctx, "link", link...); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &CompileError{Stage: "link", Output: out}
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	final, err := os.MkdirTemp(filepath.Dir(dir), key+".tmp")
	if err != nil {
		return nil, err
	}
	if err := os.Rename(archive, filepath.Join(final, "pkg.a")); err != nil {
		return nil, err
	}
	if err := os.Rename(so, filepath.Join(final, "plugin.so")); err != nil {
		return nil, err
	}
	if err := os.Rename(final, dir); err != nil {
		// Another process built the same package meanwhile: use theirs.
		_ = os.RemoveAll(final)
		if !fileExists(built.Plugin) {
			return nil, err
		}
		built.Cached = true
	}
	b.archives[pkg.Path] = built.Archive
	b.cells[pkg.Path] = true
	return built, nil
}

// Adopt records a cell package built earlier (by this process or another,
// e.g. the kernel for a launched worker) so that later cells may import it.
func (b *Builder) Adopt(path, archive string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.archives[path] = archive
	b.cells[path] = true
}

// Archives returns the compiled archives (export data) of the packages
// the Builder resolved, by import path, other than cell packages. Another
// process on this machine may Adopt them instead of resolving the same
// packages again with the go command.
func (b *Builder) Archives() map[string]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]string, len(b.archives))
	for p, a := range b.archives {
		if !b.cells[p] {
			out[p] = a
		}
	}
	return out
}

// UseArchives records archives another Builder of the same configuration
// resolved (see Archives), those whose files exist here: the packages need
// no go command to be imported. Cells built against them get the keys
// they would get after resolving the packages here (the paths are the go
// build cache's, named by content).
func (b *Builder) UseArchives(archives map[string]string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for p, a := range archives {
		if _, known := b.archives[p]; !known && fileExists(a) {
			b.archives[p] = a
		}
	}
}

// key is the cache key of a package: everything that decides its output.
func (b *Builder) key(pkg Package) string {
	h := sha256.New()
	fmt.Fprintf(h, "goaccel cell v1\x00%s\x00%s\x00%s\x00%s\x00%s\x00%v\x00", b.tc.Version, b.host.GOOS, b.host.GOARCH, b.host.GOAMD64, b.host.Tags, b.host.Trimpath)
	fmt.Fprintf(h, "%s\x00%d\x00", pkg.Path, len(pkg.Source))
	h.Write(pkg.Source)
	imports := append([]string(nil), pkg.Imports...)
	sort.Strings(imports)
	for _, p := range imports {
		fmt.Fprintf(h, "\x00%s=%s", p, b.archives[p])
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// importcfg lists every package known, for the compiler and the linker.
func (b *Builder) importcfg() []byte {
	paths := make([]string, 0, len(b.archives))
	for p := range b.archives {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var buf bytes.Buffer
	for _, p := range paths {
		fmt.Fprintf(&buf, "packagefile %s=%s\n", p, b.archives[p])
	}
	return buf.Bytes()
}

// tool runs go tool NAME from the toolchain's tool directory.
func (b *Builder) tool(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(b.tc.ToolDir, name), args...)
	cmd.Env = append(os.Environ(), "GOROOT="+b.tc.Env["GOROOT"])
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// langVersion is the -lang flag for a toolchain version (go1.26.8 → go1.26).
func langVersion(v string) string {
	v = strings.Fields(v)[0]
	parts := strings.SplitN(strings.TrimPrefix(v, "go"), ".", 3)
	if len(parts) >= 2 {
		return "go" + parts[0] + "." + parts[1]
	}
	return v
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// ErrUnavailable matches an *Unavailable with errors.Is.
var ErrUnavailable = errors.New("compiled cells are unavailable")

// Is makes errors.Is(err, ErrUnavailable) hold for an *Unavailable.
func (u *Unavailable) Is(target error) bool { return target == ErrUnavailable }
