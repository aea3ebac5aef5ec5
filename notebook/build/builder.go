package build

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
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
	archives map[string]string  // package path (a local package's mapped path) → compiled archive
	listErrs map[string]error   // import path → why it cannot be imported
	cells    map[string]bool    // import paths of cell packages built here
	pkgs     map[string]*listed // resolved packages by import path
	local    localState         // packages of local modules (see local.go)
	modList  []ModuleDir        // the build list (Modules), until the session module changes

	// Cells link against a shared library (see shared.go) when wantShared
	// holds; lib is that library once built, sharedErr why it could not be.
	wantShared bool
	sharedDir  string // where the libraries are kept
	lib        *sharedLib
	sharedErr  error
	views      viewState // views of lib for links (views.go)

	// modSP gives packages of the module cache's modules interrupt
	// checks (modsafepoints.go).
	modSP modSafepoints

	attMu       sync.Mutex // guards the fields below
	attCtx      context.Context
	attProgress func(string)
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
	defaultCache := ""
	if base, err := os.UserCacheDir(); err == nil {
		defaultCache = filepath.Join(base, "goaccel", "build")
	}
	if cache == "" {
		if defaultCache == "" {
			return nil, &Unavailable{"no cache directory"}
		}
		cache = defaultCache
	}
	cfg := sha256.Sum256([]byte(strings.Join([]string{tc.Version, host.GOOS, host.GOARCH, host.GOAMD64, host.Tags, fmt.Sprint(host.Trimpath), host.SourceDir}, "\x00")))
	root := filepath.Join(cache, hex.EncodeToString(cfg[:8]))
	// The shared library is named by its content: every Builder of this
	// configuration shares it, whatever its cache of cells.
	sharedDir := filepath.Join(root, "shared")
	if defaultCache != "" {
		sharedDir = filepath.Join(defaultCache, hex.EncodeToString(cfg[:8]), "shared")
	}
	if err := os.MkdirAll(filepath.Join(root, "sessions"), 0o755); err != nil {
		return nil, &Unavailable{"cannot create the build cache: " + err.Error()}
	}
	markConfig(root, host.SourceDir)
	now := time.Now()
	trimCells(root, cacheLimit(), cacheKeep, now)
	trimShared(sharedDir, cacheKeep, sharedActive, DefaultSharedLimit, now)
	trimConfigs(cache, root, cacheKeep, now)
	if defaultCache != "" && defaultCache != cache {
		trimConfigs(defaultCache, filepath.Dir(sharedDir), cacheKeep, now)
	}
	sdir, err := os.MkdirTemp(filepath.Join(root, "sessions"), "s")
	if err != nil {
		return nil, &Unavailable{"cannot create the session module: " + err.Error()}
	}
	mod, err := newSessionModule(sdir, tc, host)
	if err != nil {
		return nil, &Unavailable{"cannot create the session module: " + err.Error()}
	}
	return &Builder{host: host, tc: tc, mod: mod, root: root, sharedDir: sharedDir, wantShared: sharedWanted(host),
		archives: map[string]string{}, listErrs: map[string]error{}, cells: map[string]bool{},
		pkgs: map[string]*listed{}, local: newLocalState(),
		modSP: modSafepoints{dir: filepath.Join(filepath.Dir(sharedDir), "safepoints")}}, nil
}

// Close removes the session module.
func (b *Builder) Close() error { return os.RemoveAll(b.mod.dir) }

// Host returns the configuration plugins are built for.
func (b *Builder) Host() Host { return b.host }

// Dir is the session module's directory (GoNB's GONB_TMP_DIR, where its
// !* commands run).
func (b *Builder) Dir() string { return b.mod.dir }

// GoMod returns the session module's go.mod.
func (b *Builder) GoMod() (string, error) { return b.mod.goMod() }

// Get adds or pins modules in the session module (`%go get mod@version
// ...`), refusing versions of modules the process already holds (a
// *ConflictError) and explaining failures to fetch (a *FetchError).
// progress, when not nil, hears what the go command downloads.
func (b *Builder) Get(ctx context.Context, progress func(string), queries ...string) error {
	if len(queries) == 0 {
		return errors.New("nothing to get: name a module, e.g. gonum.org/v1/plot@latest")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.mod.get(ctx, queries, b.pinned(), progress); err != nil {
		return err
	}
	b.forget()
	return nil
}

// Use makes the local module in dir importable (`%use DIR`) and returns its
// module path. Using it again picks up changes to its source: the next
// import of its packages builds them anew.
func (b *Builder) Use(ctx context.Context, dir string, progress func(string)) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	path, err := b.mod.use(ctx, dir, b.pinned(), progress)
	if err != nil {
		return "", err
	}
	b.forget()
	return path, nil
}

// forget drops what a change to the session module may have changed:
// which version of each local package is current, and import failures.
// Other resolved packages stay: their modules are pinned (see pinned).
// Callers hold b.mu.
func (b *Builder) forget() {
	b.local.current = map[string]string{}
	b.listErrs = map[string]error{}
	b.modList = nil
}

// pinned lists the modules of packages resolved so far (module path →
// version): cells may have loaded them, and a process cannot load a second
// version of a package. Local modules are not pinned (their packages get a
// new path per version, see local.go). Callers hold b.mu.
func (b *Builder) pinned() map[string]string {
	out := map[string]string{}
	for _, p := range b.pkgs {
		if p.Standard || p.Module == nil || p.Module.Path == ModulePath || (p.isLocal() && !b.local.fallback[p.ImportPath]) {
			continue
		}
		out[p.Module.Path] = p.Module.version()
	}
	return out
}

// GoWork applies the go.work file in dir, if there is one, as %use would:
// its use directives make local modules importable and its replace
// directives join the session module's. It returns the module paths it
// used (none without a go.work).
func (b *Builder) GoWork(ctx context.Context, dir string, progress func(string)) ([]string, error) {
	file := filepath.Join(dir, "go.work")
	if !fileExists(file) {
		return nil, nil
	}
	var out bytes.Buffer
	if err := b.mod.goCmd(ctx, &out, nil, "work", "edit", "-json", file); err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	var work struct {
		Use     []struct{ DiskPath string }
		Replace []struct {
			Old, New struct{ Path, Version string }
		}
	}
	if err := json.Unmarshal(out.Bytes(), &work); err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	defer b.forget()
	var used []string
	for _, u := range work.Use {
		d := u.DiskPath
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		path, err := b.mod.use(ctx, d, b.pinned(), progress)
		if err != nil {
			return used, fmt.Errorf("%s: use %s: %w", file, u.DiskPath, err)
		}
		used = append(used, path)
	}
	for _, r := range work.Replace {
		old, new := r.Old.Path, r.New.Path
		if r.Old.Version != "" {
			old += "@" + r.Old.Version
		}
		if r.New.Version != "" {
			new += "@" + r.New.Version
		} else if !filepath.IsAbs(new) {
			new = filepath.Join(dir, new)
		}
		if err := b.mod.replace(ctx, old, new, b.pinned()); err != nil {
			return used, fmt.Errorf("%s: replace %s => %s: %w", file, old, new, err)
		}
	}
	return used, nil
}

// Attend makes the Builder's on-demand work for the running cell (the
// Importer resolving packages and fetching the modules that provide them)
// use ctx and report progress there, until done is called. Failures to
// fetch a module are tried again from the next Attend on (the network may
// be back).
func (b *Builder) Attend(ctx context.Context, progress func(string)) (done func()) {
	b.mu.Lock()
	for p, err := range b.listErrs {
		var fe *FetchError
		if errors.As(err, &fe) {
			delete(b.listErrs, p)
		}
	}
	b.mu.Unlock()
	b.attMu.Lock()
	b.attCtx, b.attProgress = ctx, progress
	b.attMu.Unlock()
	return func() {
		b.attMu.Lock()
		b.attCtx, b.attProgress = nil, nil
		b.attMu.Unlock()
	}
}

// attended returns what Attend set, or a context with a generous timeout.
func (b *Builder) attended() (context.Context, func(string), context.CancelFunc) {
	b.attMu.Lock()
	ctx, progress := b.attCtx, b.attProgress
	b.attMu.Unlock()
	if ctx != nil {
		return ctx, progress, func() {}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	return ctx, nil, cancel
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
	// Shared are the shared libraries the plugin links against, to load
	// (shlib.Load) before it; none when the plugin carries every package.
	Shared []string
	// Inits are the library packages the plugin reaches, in the order Go
	// initializes them, to initialize (shlib.Init) before opening it where
	// the process has not (inits.go).
	Inits  []string
	Cached bool // taken from the cache
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
	if err := b.resolveLocked(ctx, missing, say); err != nil {
		return nil, err
	}
	// Marked used after this build (below): trimming removes the oldest
	// first, and a cell must not go before the later cells built on it.
	defer b.touchImports(pkg)
	touch(filepath.Join(b.root, configUsed)) // trimConfigs spares it
	key := b.key(pkg)
	dir := filepath.Join(b.root, "cells", key[:2], key)
	built := &Built{Path: pkg.Path, Archive: filepath.Join(dir, "pkg.a"), Plugin: filepath.Join(dir, "plugin.so")}
	if b.lib != nil {
		built.Shared = []string{b.lib.path}
		built.Inits = b.initOrder(pkg.Imports)
		touch(filepath.Dir(b.lib.path)) // in use: not to be trimmed
	}
	if fileExists(built.Archive) && fileExists(built.Plugin) {
		touch(dir)
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
	if err := os.WriteFile(cfg, b.importcfg(true, ""), 0o644); err != nil {
		return nil, err
	}
	archive := filepath.Join(tmp, "pkg.a")
	goVersion := b.tc.Version
	compile := []string{"-o", archive, "-p", pkg.Path, "-lang=" + langVersion(goVersion), "-complete",
		"-installsuffix", "dynlink", "-goversion", goVersion, "-c=2", "-dynlink", "-nolocalimports",
		"-importcfg", cfg, "-pack", src}
	if b.lib != nil {
		ref := filepath.Join(tmp, "goaccel_shim.go")
		if err := os.WriteFile(ref, []byte(shimRef), 0o644); err != nil {
			return nil, err
		}
		compile = append(compile[:len(compile)-1], "-linkshared", ref, src)
	}
	// The cell's file lies in a new temporary directory each time: without
	// it in the output, building a cell again gives the same archive, so
	// cached plugins of later cells still match it.
	compile = append([]string{"-trimpath", tmp + "=>"}, compile...)
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
	var lib string // what the linker reads of the library: a view of it, or itself
	if b.lib != nil {
		lib = b.lib.path
		if v := b.viewFor(ctx, archive); v != "" {
			lib = v
		}
	}
	defer func() { b.views.linked = lib }()
	out, err := b.link(ctx, tmp, pkg.Path, archive, so, lib)
	if err != nil && ctx.Err() == nil && lib != "" && lib != b.lib.path {
		// A view lacking a symbol the link needs would be a mistake of
		// linkview.go: say so, and use the library itself.
		logrus.WithField("view", lib).Warnf("linking %s against a view of the shared library failed; linking against the library: %s", pkg.Path, firstLines(out, 3))
		b.views.fallbacks++
		lib = b.lib.path
		out, err = b.link(ctx, tmp, pkg.Path, archive, so, lib)
	}
	if err != nil {
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

// link links the compiled package archive into the plugin so, against
// lib (the shared library or a view of it) unless that is "".
func (b *Builder) link(ctx context.Context, tmp, path, archive, so, lib string) (string, error) {
	linkcfg := filepath.Join(tmp, "importcfg.link")
	if err := os.WriteFile(linkcfg, b.importcfg(false, lib), 0o644); err != nil {
		return "", err
	}
	args := []string{"-o", so, "-importcfg", linkcfg, "-installsuffix", "dynlink", "-pluginpath", path,
		"-buildmode=plugin", "-s", "-w", "-checklinkname=0", "-extld=" + strings.Fields(b.tc.CC)[0]}
	if lib != "" {
		args = append(args, "-linkshared", "-linkmode=external", "-L", filepath.Dir(b.lib.path),
			"-extld="+b.lib.extld, "-extldflags=-Wl,--version-script="+b.lib.script)
	}
	return b.tool(ctx, "link", append(args, archive)...)
}

// touchImports marks the cell packages pkg imports used.
func (b *Builder) touchImports(pkg Package) {
	for _, p := range pkg.Imports {
		if b.cells[p] {
			touch(filepath.Dir(b.archiveOf(p)))
		}
	}
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
// process on this machine may adopt them (State, AdoptState) instead of
// resolving the same packages again with the go command.
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

// key is the cache key of a package: everything that decides its output.
func (b *Builder) key(pkg Package) string {
	h := sha256.New()
	fmt.Fprintf(h, "goaccel cell v2\x00%s\x00%s\x00%s\x00%s\x00%s\x00%v\x00", b.tc.Version, b.host.GOOS, b.host.GOARCH, b.host.GOAMD64, b.host.Tags, b.host.Trimpath)
	if b.lib != nil {
		fmt.Fprintf(h, "shared %s\x00", b.lib.id)
	}
	fmt.Fprintf(h, "%s\x00%d\x00", pkg.Path, len(pkg.Source))
	h.Write(pkg.Source)
	imports := append([]string(nil), pkg.Imports...)
	sort.Strings(imports)
	for _, p := range imports {
		fmt.Fprintf(h, "\x00%s=%s", p, b.archiveOf(p))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// importcfg lists every package known, for the compiler (with importmap
// lines sending imports of local packages to their current version) or the
// linker (packages of the shared library are in lib, the library or a view
// of it).
func (b *Builder) importcfg(compile bool, lib string) []byte {
	paths := make([]string, 0, len(b.archives))
	for p := range b.archives {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var buf bytes.Buffer
	if compile {
		buf.Write(b.local.importmap())
	}
	for _, p := range paths {
		if !compile && lib != "" && b.libOf(p) != "" {
			fmt.Fprintf(&buf, "packageshlib %s=%s\n", p, lib)
			continue
		}
		fmt.Fprintf(&buf, "packagefile %s=%s\n", p, b.archives[p])
	}
	if b.lib != nil {
		fmt.Fprintf(&buf, "packagefile %s=%s\n", shimPath, b.lib.shim)
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
