package build

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/sirupsen/logrus"

	"github.com/goaccel/goaccel/notebook/build/objrefs"
)

// maxViews is how many views of a library are kept; the least recently
// used go first. A view holds some thousand symbols and their data (its
// file is mostly a hole), so it is small, and the number is what reruns
// of recent cells find.
const maxViews = 64

// viewState is what a Builder knows of views (linkview.go). Callers hold
// b.mu.
type viewState struct {
	// indexed delivers the library's index, read in the background from
	// when the library is ready (startIndex); index holds it once taken.
	indexed chan indexResult
	index   *libIndex
	refs    map[string]*objrefs.Refs // of archives linked, by path
	failed  error                    // set when views cannot be made
	// selectSymbols is index.selectSymbols; tests replace it to make a
	// view that lacks symbols.
	selectSymbols func(x *libIndex, names []string) []int32
	// linked is what the last link read of the library (a view, the
	// library, or ""); fallbacks counts links done again against the
	// library after failing against a view.
	linked    string
	fallbacks int
}

// viewFor returns the view of the library for linking archive, making it
// when needed, or "" to link against the library itself.
func (b *Builder) viewFor(ctx context.Context, archive string) string {
	if b.lib == nil || b.views.failed != nil {
		return ""
	}
	x, err := b.viewIndex(ctx)
	if err != nil {
		if ctx.Err() == nil {
			b.views.failed = err
			logrus.WithError(err).Warn("cells link against the whole shared library: no view of it")
		}
		return ""
	}
	names, err := b.linkedNames(archive)
	if err != nil {
		logrus.WithError(err).Warn("linking against the whole shared library: the objects' references are unknown")
		return ""
	}
	choose := b.views.selectSymbols
	if choose == nil {
		choose = (*libIndex).selectSymbols
	}
	selected := choose(x, names)
	dir := filepath.Join(filepath.Dir(b.lib.path), "views", viewName(selected))
	path := filepath.Join(dir, filepath.Base(b.lib.path))
	if fileExists(path) {
		touch(dir)
		return path
	}
	if err = os.MkdirAll(dir, 0o755); err == nil {
		err = x.writeView(path, selected)
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

// linkedNames lists the names that the objects a link of archive loads
// refer to: archive's, and those of the packages outside the library
// that it imports, transitively (earlier cells, the shim).
func (b *Builder) linkedNames(archive string) ([]string, error) {
	if b.views.refs == nil {
		b.views.refs = map[string]*objrefs.Refs{}
	}
	var names []string
	seen := map[string]bool{}
	var visit func(path string, keep bool) error
	visit = func(path string, keep bool) error {
		r := b.views.refs[path]
		if r == nil {
			var err error
			if r, err = objrefs.Read(path); err != nil {
				return err
			}
			if keep {
				b.views.refs[path] = r
			}
		}
		names = append(names, r.Names...)
		for _, p := range r.Imports {
			if seen[p] || b.libOf(p) != "" {
				continue
			}
			seen[p] = true
			a := b.archives[p]
			if p == shimPath {
				a = b.lib.shim
			}
			if a == "" {
				return fmt.Errorf("%s imports %s, whose archive is unknown", path, p)
			}
			if err := visit(a, true); err != nil {
				return err
			}
		}
		return nil
	}
	// archive is new, in a temporary directory: not kept.
	return names, visit(archive, false)
}

// indexResult is what reading the library's index gave.
type indexResult struct {
	x   *libIndex
	err error
}

// startIndex reads the index of the library at path in the background
// (0.1-0.2 s, under a cell's compile). The goroutine owns the index until
// it delivers it; it ends then, whether or not a link ever asks.
func (b *Builder) startIndex(path string) {
	ch := make(chan indexResult, 1)
	b.views.indexed = ch
	go func() {
		x, err := readLibIndex(path)
		if err == nil {
			x.index()
		}
		ch <- indexResult{x, err}
	}()
}

// viewIndex returns the library's index, waiting for startIndex.
func (b *Builder) viewIndex(ctx context.Context) (*libIndex, error) {
	if b.views.index != nil {
		return b.views.index, nil
	}
	if b.views.indexed == nil {
		return nil, fmt.Errorf("no shared library")
	}
	select {
	case r := <-b.views.indexed:
		b.views.indexed = nil
		if r.err != nil {
			return nil, r.err
		}
		b.views.index = r.x
		return r.x, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
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
