package build

// Changes to the session module made from outside the Builder: GoNB's !*
// shell lines (go get, go mod edit in GONB_TMP_DIR) and %goworkfix.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// External runs run, which may edit the session module's go.mod itself,
// and takes the change as %go get would: requirements of local modules
// whose replace directive was dropped are dropped too, and a change that
// moves a module the process holds (a *ConflictError) or leaves a go.mod
// the go command cannot load is undone. run's own error is returned
// after that.
func (b *Builder) External(ctx context.Context, what string, run func() error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	before := b.mod.snapshot()
	runErr := run()
	if after := b.mod.snapshot(); bytes.Equal(after.mod, before.mod) {
		return runErr
	}
	if err := b.mod.dropOrphans(ctx); err != nil {
		b.mod.restore(before)
		return fmt.Errorf("the change to go.mod was undone: %w", err)
	}
	if err := b.mod.checkVersions(ctx, what, "", b.pinned()); err != nil {
		b.mod.restore(before)
		return fmt.Errorf("the change to go.mod was undone: %w", err)
	}
	b.forget()
	return runErr
}

// editJSON is `go mod edit -json`'s output, the parts used here.
type editJSON struct {
	Require []struct{ Path, Version string }
	Replace []struct {
		Old, New struct{ Path, Version string }
	}
}

func (m *sessionModule) edits(ctx context.Context) (*editJSON, error) {
	var out bytes.Buffer
	if err := m.goCmd(ctx, &out, nil, "mod", "edit", "-json"); err != nil {
		return nil, err
	}
	var ej editJSON
	if err := json.Unmarshal(out.Bytes(), &ej); err != nil {
		return nil, fmt.Errorf("reading go mod edit -json: %w", err)
	}
	return &ej, nil
}

// dropOrphans drops the requirements of local modules (required at the
// zero version %use gives them) that have no replace directive any more.
func (m *sessionModule) dropOrphans(ctx context.Context) error {
	ej, err := m.edits(ctx)
	if err != nil {
		return err
	}
	replaced := map[string]bool{}
	for _, r := range ej.Replace {
		replaced[r.Old.Path] = true
	}
	for _, r := range ej.Require {
		if r.Version == zeroVersion && !replaced[r.Path] && r.Path != ModulePath {
			if err := m.goCmd(ctx, io.Discard, nil, "mod", "edit", "-droprequire", r.Path); err != nil {
				return err
			}
		}
	}
	return nil
}

// WorkFix is what GoWorkFix did with one module of the go.work.
type WorkFix struct {
	Module, Dir string
	// Status: "added" (a replace directive to Dir), "exists" (it was
	// there), "cache" (Dir is the module cache's copy of the version the
	// session already uses: nothing to replace).
	Status string
}

// GoWorkFix applies the go.work in the session module's directory (made
// by GoNB's `!*go work init && go work use ...`) as GoNB's %goworkfix
// does: each module it uses (but the session module) gets a replace
// directive to its directory, as %use gives one.
func (b *Builder) GoWorkFix(ctx context.Context, progress func(string)) ([]WorkFix, error) {
	file := filepath.Join(b.mod.dir, "go.work")
	if !fileExists(file) {
		return nil, fmt.Errorf("there is no go.work in %s (GONB_TMP_DIR): nothing to do", b.mod.dir)
	}
	var out bytes.Buffer
	if err := b.mod.goCmd(ctx, &out, nil, "work", "edit", "-json", file); err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	var work struct{ Use []struct{ DiskPath string } }
	if err := json.Unmarshal(out.Bytes(), &work); err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	defer b.forget()
	ej, err := b.mod.edits(ctx)
	if err != nil {
		return nil, err
	}
	replaces := map[string]string{}
	for _, r := range ej.Replace {
		replaces[r.Old.Path] = r.New.Path
	}
	var versions map[string]string
	var fixes []WorkFix
	for _, u := range work.Use {
		dir := u.DiskPath
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(b.mod.dir, dir)
		}
		dir = filepath.Clean(dir)
		if dir == filepath.Clean(b.mod.dir) {
			continue
		}
		path, err := readModulePath(dir)
		if err != nil {
			return fixes, fmt.Errorf("%s: use %s: %w", file, u.DiskPath, err)
		}
		if replaces[path] == dir {
			fixes = append(fixes, WorkFix{Module: path, Dir: dir, Status: "exists"})
			continue
		}
		if mod, version, ok := b.mod.cachedModule(ctx, dir); ok && mod == path {
			if versions == nil {
				if versions, err = b.mod.moduleVersions(ctx); err != nil {
					return fixes, err
				}
			}
			if versions[path] == version {
				fixes = append(fixes, WorkFix{Module: path, Dir: dir, Status: "cache"})
				continue
			}
		}
		if _, err := b.mod.use(ctx, dir, b.pinned(), progress); err != nil {
			return fixes, fmt.Errorf("use %s: %w", dir, err)
		}
		fixes = append(fixes, WorkFix{Module: path, Dir: dir, Status: "added"})
	}
	return fixes, nil
}

// cachedModule reports whether dir is a module's directory in the module
// cache (GOMODCACHE/escaped-path@version), and which.
func (m *sessionModule) cachedModule(ctx context.Context, dir string) (path, version string, ok bool) {
	var out bytes.Buffer
	if err := m.goCmd(ctx, &out, nil, "env", "GOMODCACHE"); err != nil {
		return "", "", false
	}
	cache := strings.TrimSpace(out.String())
	rel, err := filepath.Rel(cache, dir)
	if err != nil || strings.HasPrefix(rel, "..") {
		return "", "", false
	}
	escPath, escVersion, found := strings.Cut(filepath.ToSlash(rel), "@")
	if !found || strings.Contains(escVersion, "/") {
		return "", "", false
	}
	p, err1 := module.UnescapePath(escPath)
	v, err2 := module.UnescapeVersion(escVersion)
	if err1 != nil || err2 != nil {
		return "", "", false
	}
	return p, v, true
}

// ModuleDir is a module of the session's build list and where its source
// is (empty when it is not in the module cache).
type ModuleDir struct {
	Path, Version, Dir string
}

// Modules lists the session's build list, with each module's directory
// (a replacement's directory for a replaced module; goaccel's source for
// goaccel). The list is kept until the session module changes.
func (b *Builder) Modules(ctx context.Context) ([]ModuleDir, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.modList != nil {
		return b.modList, nil
	}
	listed, err := b.mod.listModules(ctx, nil)
	if err != nil {
		return nil, err
	}
	var list []ModuleDir
	for _, m := range listed {
		if m.Main {
			continue
		}
		md := ModuleDir{Path: m.Path, Version: m.Version, Dir: m.Dir}
		switch {
		case m.Replace != nil && isSafepointLink(m.Replace.Path):
			// A link to the module cache's copy (modsafepoints.go): the
			// module at its version, where the module cache keeps it (a
			// walk of the link itself would not enter it).
			if target, err := filepath.EvalSymlinks(m.Replace.Dir); err == nil {
				md.Dir = target
			}
		case m.Replace != nil:
			md.Version, md.Dir = m.Replace.Version, m.Replace.Dir
		}
		list = append(list, md)
	}
	b.modList = list
	return list, nil
}

// Loaded lists the modules whose packages cells imported (goaccel
// included), module path → true.
func (b *Builder) Loaded() map[string]bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string]bool{ModulePath: true}
	for _, p := range b.pkgs {
		if p.Module != nil && !p.Standard {
			out[p.Module.Path] = true
		}
	}
	return out
}

// noVersionList reports a go command failure because the module proxy
// refuses to list a module's versions (it may still serve exact ones).
func noVersionList(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "/@v/list") &&
		(strings.Contains(msg, "403 Forbidden") || strings.Contains(msg, "404 Not Found") || strings.Contains(msg, "410 Gone"))
}

// graphVersion finds the newest version of the module providing package
// pkg that a module of the session's build list requires in its go.mod
// (the module graph the go command prunes: a dependency's requirements).
// Callers hold b.mu.
func (b *Builder) graphVersion(ctx context.Context, pkg string) (mod, version string, ok bool) {
	var out bytes.Buffer
	if err := b.mod.goCmd(ctx, &out, nil, "env", "GOMODCACHE"); err != nil {
		return "", "", false
	}
	cache := filepath.Join(strings.TrimSpace(out.String()), "cache", "download")
	vers, err := b.mod.moduleVersions(ctx)
	if err != nil {
		return "", "", false
	}
	for m, v := range vers {
		if !strings.HasPrefix(v, "v") {
			continue
		}
		em, err1 := module.EscapePath(m)
		ev, err2 := module.EscapeVersion(v)
		if err1 != nil || err2 != nil {
			continue
		}
		gomod, err := os.ReadFile(filepath.Join(cache, em, "@v", ev+".mod"))
		if err != nil {
			continue
		}
		for req, rv := range requires(string(gomod)) {
			if (pkg == req || strings.HasPrefix(pkg, req+"/")) && len(req) >= len(mod) {
				if req != mod || semver.Compare(rv, version) > 0 {
					mod, version = req, rv
				}
			}
		}
	}
	return mod, version, mod != ""
}
