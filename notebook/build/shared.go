package build

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
)

// A cell's plugin used to carry everything it imports: the runtime, fmt,
// goaccel's packages — about 4 MB on disk for a one-line cell, most of it
// mapped again into the kernel at every load, and never unloaded. Now the
// standard library and goaccel's packages for cells are linked once into a
// Go shared library (-buildmode=shared), cells are compiled and linked
// against it (-linkshared), and a cell's plugin carries its own code (tens
// of KB). The kernel loads the library before the first such plugin (see
// notebook/shlib).
//
// Linking a plugin reads every symbol of the library (about 0.5 s more than
// a plugin that carries its packages). Two libraries (a small core, and the
// rest linked against it) would make most links faster, but the linker
// cannot link a library whose generic types have methods instantiated in
// another ("cannot target DYNIMPORT sym in section-relative reloc"), and the
// standard library has such types (unique.Handle in net/netip).
//
// Two things the linker does not do for a plugin linked against a shared
// library are done here:
//   - it expects runtime.addmoduledata inside the plugin, so each cell links
//     a stand-in (the shim package) that jumps to the process's own;
//   - the plugin's check that its packages match the process's compares
//     fingerprints of packages compiled with -linkshared against the
//     process's, compiled without: the plugin's copies of those
//     fingerprints are made local to it (a version script), so that the
//     check compares the plugin with itself. The library is built from the
//     same export data as every cell, so the check has nothing to catch
//     there; what it caught, a kernel older than goaccel's source, is
//     caught before the library is used (sourceNotNewer).

// sharedRoots are the packages (with everything they import) the library
// holds besides the standard library: goaccel's packages for cells and
// GoMLX under Accelerate. Cells link against a view of the library that
// holds what they refer to (linkview.go), so its size costs a link
// nothing; but every plugin load indexes the types of every loaded module
// again (the runtime's typelinksinit), and the launchers' etcd and gRPC
// made that 30 ms more per cell (loading a new loop cell: 30-40 ms without
// them, 57-84 ms with). So the launchers stay out, and are linked into the
// few cells that import them, as packages outside the library are.
var sharedRoots = []string{"notebook/gxrt", "notebook/shlib/modreg", "display", "input", "comm",
	"accelerate", "accelerate/amp", "accelerate/ddp", "accelerate/kwargs", "accelerate/nn",
	"accelerate/profiler", "accelerate/safetensors", "accelerate/checkpoint", "accelerate/gomlx",
	"tracking", "tracking/values", "tracking/media", "gpu", "datasets/mnist", "datasets/shakespeare"}

// notShared says whether a standard package stays out of the libraries:
// plugin (a library that contains it defines the symbols plugins check their
// packages against, and the plugin's own copies then go missing) and the
// race detector's runtime.
func notShared(path string) bool {
	return path == "plugin" || strings.HasPrefix(path, "runtime/race") || strings.HasPrefix(path, "cmd/")
}

// sharedLib is the library cells link against.
type sharedLib struct {
	id       string          // names its content
	path     string          // the library
	extld    string          // the C linker for plugins (extldScript)
	shim     string          // the shim package's archive (shim.go)
	script   string          // the linker version script
	packages map[string]bool // import paths of the packages it holds
}

// sharedWanted says whether cells should link against a shared library in
// this configuration; GOACCEL_SHARED_LIB=0 turns it off.
func sharedWanted(h Host) bool {
	// amd64: the shim is amd64 assembly (and notebook/shlib/modreg's).
	return h.GOOS == "linux" && h.GOARCH == "amd64" && h.CGO && !h.Race &&
		os.Getenv("GOACCEL_SHARED_LIB") != "0"
}

// ensureShared makes the shared library ready the first time cells need
// packages, or turns it off for this Builder (cells then carry everything
// they import) when it cannot be built. Callers hold b.mu.
func (b *Builder) ensureShared(ctx context.Context, say func(string)) error {
	if !b.wantShared || b.lib != nil {
		return nil
	}
	lib, pkgs, err := b.buildShared(ctx, say)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		b.wantShared = false
		b.sharedErr = err
		logrus.WithError(err).Warn("compiled cells carry every package they use: no shared library")
		return nil
	}
	b.lib = lib
	b.startIndex(lib.path)
	for _, p := range pkgs {
		if p.Export != "" {
			b.archives[p.ImportPath] = p.Export
		}
		b.pkgs[p.ImportPath] = p
	}
	return nil
}

// buildShared lists the library's packages (building them into Go's build
// cache) and links the library, or finds it linked before.
func (b *Builder) buildShared(ctx context.Context, say func(string)) (*sharedLib, []*listed, error) {
	stop := after(2*time.Second, func() {
		say("building the standard library and goaccel's packages for compiled cells (once per goaccel and Go version)…")
	})
	defer stop()
	roots := []string{"std"}
	for _, p := range sharedRoots {
		roots = append(roots, ModulePath+"/"+p)
	}
	if _, err := b.modcacheDir(ctx); err != nil { // the kept listing's stamp names it
		return nil, nil, fmt.Errorf("listing the shared library's packages: %w", err)
	}
	listedPkgs, checks := b.keptListing()
	if listedPkgs != nil {
		// The kept listing was made with the replacements and the overlay
		// of interrupt checks: this session module gets them too. Checks
		// that come out otherwise (another policy; a binary that links
		// other modules into itself) mean other export data: the packages
		// are listed again.
		if _, err := b.cachedSafepoints(ctx, listedPkgs); err != nil {
			return nil, nil, err
		}
		if b.modSP.checksFor(listedPkgs) != checks {
			listedPkgs = nil
		}
	}
	if listedPkgs == nil {
		// What the packages are first (nothing is built): their modules get
		// their interrupt checks before the listing below builds them.
		var pre bytes.Buffer
		if err := b.mod.goCmd(ctx, &pre, nil, append(append([]string{"list", "-e", "-buildmode=plugin", "-deps",
			"-json=" + listFields}, b.mod.buildFlags()...), roots...)...); err != nil {
			return nil, nil, fmt.Errorf("listing the shared library's packages: %w", err)
		}
		prelisted, err := decodeListed(&pre)
		if err != nil {
			return nil, nil, err
		}
		if _, err := b.cachedSafepoints(ctx, prelisted); err != nil {
			return nil, nil, err
		}
		args := append([]string{"list", "-e", "-export", "-buildmode=plugin", "-linkshared", "-deps", "-json=" + listFields}, b.mod.buildFlags()...)
		var out bytes.Buffer
		err = b.mod.goCmd(ctx, &out, nil, append(append(args, b.modSP.overlayFlag()...), roots...)...)
		stop()
		if err != nil {
			return nil, nil, fmt.Errorf("building the shared library's packages: %w", err)
		}
		if listedPkgs, err = decodeListed(&out); err != nil {
			return nil, nil, err
		}
		if listedPkgs, err = b.relistWithSafepoints(ctx, listedPkgs, args, roots); err != nil {
			return nil, nil, fmt.Errorf("building the shared library's packages: %w", err)
		}
		b.keepListing(listedPkgs)
	}
	stop()
	if err := b.sourceNotNewer(listedPkgs); err != nil {
		return nil, nil, err
	}
	// A package that does not build leaves the library with its importers.
	bad := map[string]bool{}
	for _, p := range listedPkgs {
		if p.Error != nil || len(p.DepsErrors) > 0 || (p.Export == "" && p.ImportPath != "unsafe") || notShared(p.ImportPath) {
			bad[p.ImportPath] = true
		}
	}
	var pkgs []*listed
	for _, p := range listedPkgs {
		if !bad[p.ImportPath] && !anyIn(p.Deps, bad) {
			pkgs = append(pkgs, p)
		}
	}
	sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].ImportPath < pkgs[j].ImportPath })
	h := sha256.New()
	fmt.Fprintf(h, "goaccel shared v3\x00%s\x00", b.tc.Version)
	for _, p := range pkgs {
		fmt.Fprintf(h, "%s=%s\x00", p.ImportPath, p.Export)
	}
	id := hex.EncodeToString(h.Sum(nil)[:8])
	dir := filepath.Join(b.sharedDir, id)
	lib := &sharedLib{id: id, path: filepath.Join(dir, "libgoaccel-"+id+".so"), shim: filepath.Join(dir, "shim.a"),
		script: filepath.Join(dir, "plugin.map"), packages: map[string]bool{}}
	var objs []*listed
	for _, p := range pkgs {
		if p.ImportPath != "unsafe" { // nothing to link
			objs = append(objs, p)
			lib.packages[p.ImportPath] = true
		}
	}
	if !fileExists(lib.path) || !fileExists(lib.shim) || !fileExists(lib.script) {
		say("linking the shared library for compiled cells…")
		if err := b.linkShared(ctx, lib, objs, dir); err != nil {
			return nil, nil, err
		}
	}
	touch(dir)
	extld, err := writeExtld(ctx, dir, strings.Fields(b.tc.CC)[0], lib.path)
	if err != nil {
		return nil, nil, err
	}
	lib.extld = extld
	return lib, pkgs, nil
}

// libOf is the shared library holding the package at path, or "".
// Callers hold b.mu.
func (b *Builder) libOf(path string) string {
	if b.lib == nil || !b.lib.packages[path] {
		return ""
	}
	return b.lib.path
}

// sourceNotNewer refuses the library when a file of goaccel's packages in
// it is newer than the running kernel: the kernel may then hold another
// version of a package than the library, and nothing would catch it (see
// the version script above). Cells then carry their packages, and loading
// one reports the difference precisely.
func (b *Builder) sourceNotNewer(pkgs []*listed) error {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	info, err := os.Stat(exe)
	if err != nil {
		return nil
	}
	built := info.ModTime()
	for _, p := range pkgs {
		if p.Standard || p.Module == nil || p.Module.Path != ModulePath {
			continue
		}
		for _, f := range p.GoFiles {
			if fi, err := os.Stat(filepath.Join(p.Dir, f)); err == nil && fi.ModTime().After(built) {
				return fmt.Errorf("%s changed after this kernel was built (%s): rebuild it (make build)", filepath.Join(p.Dir, f), exe)
			}
		}
	}
	return nil
}

// anyIn says whether any of paths is in set.
func anyIn(paths []string, set map[string]bool) bool {
	for _, p := range paths {
		if set[p] {
			return true
		}
	}
	return false
}

// linkShared links the library, compiles the shim and writes the version
// script into a new directory, then moves it to dir.
func (b *Builder) linkShared(ctx context.Context, lib *sharedLib, pkgs []*listed, dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), lib.id+".tmp")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var cfg bytes.Buffer
	var objs []string
	for _, p := range pkgs {
		fmt.Fprintf(&cfg, "packagefile %s=%s\n", p.ImportPath, p.Export)
		objs = append(objs, p.ImportPath+"="+p.Export)
	}
	cfgFile := filepath.Join(tmp, "importcfg")
	if err := os.WriteFile(cfgFile, cfg.Bytes(), 0o644); err != nil {
		return err
	}
	// Lazy binding as for the kernel itself: go-nvml's functions are looked
	// up when called, in a driver that may not be installed.
	args := append([]string{"-o", filepath.Join(tmp, filepath.Base(lib.path)), "-importcfg", cfgFile,
		"-installsuffix", "dynlink", "-buildmode=shared", "-linkmode=external",
		"-extld=" + strings.Fields(b.tc.CC)[0], "-extldflags=-Wl,-z,lazy", "-w", "-checklinkname=0"}, objs...)
	if out, err := b.tool(ctx, "link", args...); err != nil {
		return fmt.Errorf("linking the shared library for compiled cells: %v: %s", err, lastLines(out, 5))
	}
	if err := b.compileShim(ctx, tmp, cfgFile); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, "plugin.map"), []byte(versionScript), 0o644); err != nil {
		return err
	}
	os.Remove(cfgFile)
	if err := os.Rename(tmp, dir); err != nil && !fileExists(lib.path) {
		return err
	}
	return nil
}

// lastLines is the end of a tool's output.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// firstLines is the start of a tool's output (where the linker says what
// failed, before any stack).
func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

// SharedLibrary is the shared library cells link against ("" when they
// carry every package they use), and why there is none when one was
// wanted.
func (b *Builder) SharedLibrary() (path string, whyNot error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lib != nil {
		return b.lib.path, nil
	}
	if b.sharedErr != nil {
		return "", b.sharedErr
	}
	if !b.wantShared {
		return "", errors.New("not used in this configuration")
	}
	return "", nil
}
