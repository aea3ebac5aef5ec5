package build

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sirupsen/logrus"
)

// maxViews is how many views of a library are kept (each holds the
// library's type data, about 20 MB); the least recently used go first.
const maxViews = 8

// viewState is what a Builder knows of views (linkview.go). Callers hold
// b.mu.
type viewState struct {
	// closures are the closures of cell packages built here, by path;
	// equal closures are one, interned by name.
	closures map[string]*closure
	interned map[string]*closure
	failed   error // set when views cannot be made
	// linked is what the last link read of the library (a view, the
	// library, or ""); fallbacks counts links done again against the
	// library after failing against a view.
	linked    string
	fallbacks int
}

// closure is the sorted list of the library's packages a cell package can
// refer to, and its view's name (viewName).
type closure struct {
	name string
	pkgs []string
}

// noteClosure finds and records the closure of pkg, or returns nil when
// that cannot be told (it imports a cell another process built, or a
// package nothing here listed).
func (b *Builder) noteClosure(pkg Package) *closure {
	if b.lib == nil {
		return nil
	}
	set := map[string]bool{}
	added := map[*closure]bool{} // earlier cells' closures already added
	add := func(p string) bool {
		if c, ok := b.views.closures[p]; ok {
			if !added[c] {
				added[c] = true
				for _, q := range c.pkgs {
					set[q] = true
				}
			}
			return true
		}
		lp := b.pkgs[p]
		if lp == nil || b.cells[p] {
			return false
		}
		for _, q := range append([]string{p}, lp.Deps...) {
			if b.lib.packages[q] {
				set[q] = true
			}
		}
		return true
	}
	// The runtime, and what the shim refers to, are in every link.
	roots := append([]string{"runtime", "runtime/cgo", ModulePath + "/notebook/shlib/modreg"}, pkg.Imports...)
	for _, p := range roots {
		if !add(p) {
			return nil
		}
	}
	pkgs := make([]string, 0, len(set))
	for p := range set {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	if b.views.closures == nil {
		b.views.closures, b.views.interned = map[string]*closure{}, map[string]*closure{}
	}
	name := viewName(pkgs)
	c, ok := b.views.interned[name]
	if !ok {
		c = &closure{name: name, pkgs: pkgs}
		b.views.interned[name] = c
	}
	b.views.closures[pkg.Path] = c
	return c
}

// viewFor returns the view of the library for c, making it when needed, or
// "" to link against the library itself.
func (b *Builder) viewFor(ctx context.Context, c *closure) string {
	if b.lib == nil || c == nil || b.views.failed != nil {
		return ""
	}
	dir := filepath.Join(filepath.Dir(b.lib.path), "views", c.name)
	path := filepath.Join(dir, filepath.Base(b.lib.path))
	if fileExists(path) {
		touch(dir)
		return path
	}
	x, err := b.libIndex(ctx)
	if err != nil {
		if ctx.Err() == nil {
			b.views.failed = err
			logrus.WithError(err).Warn("cells link against the whole shared library: no view of it")
		}
		return ""
	}
	if err = os.MkdirAll(dir, 0o755); err == nil {
		err = x.writeView(path, c.pkgs)
	}
	if err != nil {
		// Another kernel may have trimmed the directory meanwhile: this
		// link goes without a view, the next one tries again.
		logrus.WithError(err).Warn("linking against the whole shared library: no view of it")
		return ""
	}
	trimViews(filepath.Dir(dir), maxViews)
	return path
}

// libIndex reads the library's index, with its refs kept beside it or
// found now (and kept).
func (b *Builder) libIndex(ctx context.Context) (*libIndex, error) {
	x, err := readLibIndex(b.lib.path)
	if err != nil {
		return nil, err
	}
	refs := filepath.Join(filepath.Dir(b.lib.path), "view-refs")
	if x.readRefs(refs) == nil {
		return x, nil
	}
	var packages, exports []string
	for p := range b.lib.packages {
		packages = append(packages, p)
		if lp := b.pkgs[p]; lp != nil && lp.Export != "" {
			exports = append(exports, lp.Export)
		}
	}
	names, err := b.typeNames(ctx, exports)
	if err != nil {
		return nil, err
	}
	x.findRefs(packages, names)
	if err := x.writeRefs(refs); err != nil {
		return nil, err
	}
	return x, nil
}

// typeNames lists the names of the type symbols in the objects of
// archives (go tool nm; its output for the library's packages is some
// 60 MB, read as it comes).
func (b *Builder) typeNames(ctx context.Context, archives []string) ([]string, error) {
	sort.Strings(archives)
	// go tool builds nm when it is not yet in the build cache (Go no
	// longer ships it built); outside any module, with no GOFLAGS.
	cmd := exec.CommandContext(ctx, b.tc.Go, append([]string{"tool", "nm"}, archives...)...)
	cmd.Env = append(os.Environ(), "GOROOT="+b.tc.Env["GOROOT"], "GOFLAGS=", "GOTOOLCHAIN=local")
	cmd.Dir = os.TempDir()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var names []string
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if n := nmName(sc.Bytes()); strings.HasPrefix(n, "type:") && !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	scanErr := sc.Err()
	if scanErr != nil {
		_, _ = io.Copy(io.Discard, out)
	}
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("listing the symbols of the shared library's packages: %v: %s", err, lastLines(stderr.String(), 3))
	}
	return names, scanErr
}

// nmName is the symbol name on a line of go tool nm's output for several
// files: "FILE:\t ADDR KIND NAME", ADDR blank for undefined symbols (names
// may hold spaces).
func nmName(line []byte) string {
	if i := bytes.IndexByte(line, '\t'); i >= 0 {
		line = line[i+1:]
	}
	line = bytes.TrimLeft(line, " ")
	if len(line) > 2 && line[1] == ' ' { // no address
		return string(line[2:])
	}
	if i := bytes.IndexByte(line, ' '); i >= 0 && len(line) > i+3 {
		return string(line[i+3:])
	}
	return ""
}

// trimViews removes the views under dir but the keep used last.
func trimViews(dir string, keep int) {
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) <= keep {
		return
	}
	type view struct {
		path string
		used int64
	}
	var views []view
	for _, e := range entries {
		if info, err := e.Info(); err == nil && e.IsDir() {
			views = append(views, view{filepath.Join(dir, e.Name()), info.ModTime().UnixNano()})
		}
	}
	sort.Slice(views, func(i, j int) bool { return views[i].used > views[j].used })
	for _, v := range views[min(keep, len(views)):] {
		_ = os.RemoveAll(v.path)
	}
}

// prepareViews finds and keeps the library's refs (libIndex), when cells
// link against one, so that a kernel's first view does not wait for them.
func (b *Builder) prepareViews(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lib == nil {
		return nil
	}
	_, err := b.libIndex(ctx)
	return err
}
