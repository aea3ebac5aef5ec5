package build

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"

	"github.com/goaccel/goaccel/notebook/safepoint"
)

// Packages of modules from the module cache (GoMLX, a module fetched on
// import) get interrupt checks too. The go command compiles them, and its
// -overlay, which makes it read other files in place of some, refuses
// files under GOMODCACHE; so the session module replaces such a module
// (at its version) with a directory outside GOMODCACHE that is a symbolic
// link to the module cache's copy:
//
//	replace github.com/gomlx/gomlx v0.26.0 => <cache>/safepoints/goaccel-safepoint-links/<H>/github.com/gomlx/gomlx@v0.26.0
//
// (H names the module cache), and the overlay gives the packages that get
// checks rewritten copies of their files, named by the version of the
// rewrite and the original's content. Every go command that lists or
// builds packages gets the overlay as it is, so a package is compiled one
// way in every build of a session; the shared library's kept listing
// brings its replacements with it, and a Builder's State the packages it
// rewrote, so that a launched worker compiles them as the kernel did (what
// the worker compiles itself must link with the kernel's export data). The
// link keeps the module's path and version in every file name, so stack
// traces and code that reads versions from paths see what they saw.

// ModuleSafepointsEnv set to "0" turns the module cache's interrupt checks
// off (they are on otherwise): a way back to the modules' own builds if a
// module misbehaves compiled from its link. (They were off by default while
// kernels that compiled GoMLX from its link crashed in the garbage
// collector now and then; the cause was the shared library's variables,
// which were not collection roots until the first plugin load: see
// notebook/shlib/modreg.Register.)
const ModuleSafepointsEnv = "GOACCEL_MODULE_SAFEPOINTS"

// ModuleSafepoints reports whether the module cache's packages get
// interrupt checks (ModuleSafepointsEnv).
func ModuleSafepoints() bool { return os.Getenv(ModuleSafepointsEnv) != "0" }

// modSafepoints is the Builder's replacements and overlay.
type modSafepoints struct {
	mu         sync.Mutex
	dir        string                      // <cache>/safepoints
	modcache   string                      // GOMODCACHE, once known
	redirected map[string]string           // "path@version" → its link
	replace    map[string]string           // overlay: file → rewritten copy
	looked     map[string]bool             // package directories looked at
	pkgs       map[string]SafepointPackage // the packages looked at, for State
	file       string                      // the overlay file ("" while empty)
}

// SafepointPackage is a package of the module cache that a Builder compiles
// with interrupt checks: another process (a launched worker, on this
// machine or another) compiles it the same way, so that what it compiles
// itself links with the export data it adopts.
type SafepointPackage struct {
	Module     string   `json:"module"`
	Version    string   `json:"version"`
	ImportPath string   `json:"import_path"`
	Name       string   `json:"name"`
	Rel        string   `json:"rel"` // its directory in the module ("" for the root)
	GoFiles    []string `json:"go_files"`
}

// linkDirName names the directory of the links: a replacement whose
// directory lies under one is a module cache's module, not a local module
// (isSafepointLink).
const linkDirName = "goaccel-safepoint-links"

// linkRoot is where the links into module cache modcache are: each module
// cache has its own, so that processes with different module caches (a
// test's, a user's GOMODCACHE) never point one link two ways, and a
// package's file names (in its export data) name the module cache it was
// compiled from.
func (s *modSafepoints) linkRoot(modcache string) string {
	sum := sha256.Sum256([]byte(modcache))
	return filepath.Join(s.dir, linkDirName, hex.EncodeToString(sum[:6]))
}

// ours reports whether dir is one of the links of the replacements.
func (s *modSafepoints) ours(dir string) bool { return isSafepointLink(dir) }

// isSafepointLink reports whether a replacement's directory is a link made
// for interrupt checks.
func isSafepointLink(dir string) bool {
	sep := string(filepath.Separator)
	return strings.Contains(dir, sep+linkDirName+sep)
}

// ProgramGoMod is the session module's go.mod for a program made of the
// notebook's cells (goaccel export): without the replacements the Builder
// made for its own builds, which link modules to a directory of this
// machine's cache for their interrupt checks; the program uses the
// modules as published.
func (b *Builder) ProgramGoMod() (string, error) {
	text, err := b.GoMod()
	if err != nil {
		return "", fmt.Errorf("reading the session's go.mod: %w", err)
	}
	f, err := modfile.Parse("go.mod", []byte(text), nil)
	if err != nil {
		return "", fmt.Errorf("reading the session's go.mod: %w", err)
	}
	for _, r := range slices.Clone(f.Replace) {
		if isSafepointLink(r.New.Path) {
			if err := f.DropReplace(r.Old.Path, r.Old.Version); err != nil {
				return "", err
			}
		}
	}
	f.Cleanup()
	out, err := f.Format()
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// overlayFlag is the go command's -overlay flag, or nothing.
func (s *modSafepoints) overlayFlag() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.file == "" {
		return nil
	}
	return []string{"-overlay=" + s.file}
}

// checksFor names how this Builder compiles pkgs: which of their modules
// it compiles from links, and the rewritten copies (named by content) of
// the files in their directories. Two Builders that name pkgs alike
// compile them to the same export data; a kernel and a test binary, which
// link different modules into themselves (left without checks), may not.
func (s *modSafepoints) checksFor(pkgs []*listed) string {
	dirs := map[string]bool{}
	var entries []string
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range pkgs {
		dirs[p.Dir] = true
		if p.Module != nil && p.Module.Version != "" {
			entries = append(entries, "module\x00"+p.Module.Path+"@"+p.Module.Version+"\x00"+s.redirected[p.Module.Path+"@"+p.Module.Version])
		}
	}
	for file, cp := range s.replace {
		if dirs[filepath.Dir(file)] {
			entries = append(entries, "file\x00"+file+"\x00"+cp)
		}
	}
	sort.Strings(entries)
	entries = slices.Compact(entries)
	sum := sha256.Sum256([]byte(strings.Join(entries, "\x00")))
	return hex.EncodeToString(sum[:16])
}

// modcacheDir is GOMODCACHE.
func (b *Builder) modcacheDir(ctx context.Context) (string, error) {
	s := &b.modSP
	s.mu.Lock()
	dir := s.modcache
	s.mu.Unlock()
	if dir != "" {
		return dir, nil
	}
	var out bytes.Buffer
	if err := b.mod.goCmd(ctx, &out, nil, "env", "GOMODCACHE"); err != nil {
		return "", err
	}
	dir = strings.TrimSpace(out.String())
	s.mu.Lock()
	s.modcache = dir
	s.mu.Unlock()
	return dir, nil
}

// cachedModuleSafepoints says whether package p's module, from the module
// cache, is compiled from its link, and whether and where p gets checks.
// Every package of such a module is compiled from the link, whether it gets
// checks or not, from the first time the module is listed: a package
// compiled from the module cache's directory has other file names in its
// export data than the same package compiled from the link, so a module
// that moved to its link later would leave export data (the kernel's, a
// worker's) that no longer links with what its importers were compiled
// against ("fingerprint mismatch").
func (b *Builder) cachedModuleSafepoints(p *listed, modcache string) (safepoint.Choice, bool) {
	if !ModuleSafepoints() {
		return safepoint.Choice{}, false
	}
	if p.Standard || p.Module == nil || p.Module.Main || p.Module.Path == ModulePath || p.Name == "main" ||
		p.Module.Version == "" || p.Dir == "" || p.Module.Dir == "" {
		return safepoint.Choice{}, false
	}
	if _, inKernel := b.host.Deps[p.Module.Path]; inKernel {
		return safepoint.Choice{}, false
	}
	if r := p.Module.Replace; r != nil && !b.modSP.ours(r.Path) {
		return safepoint.Choice{}, false // the user's replacement
	}
	if p.Module.Replace == nil && (modcache == "" || !strings.HasPrefix(p.Module.Dir, modcache+string(filepath.Separator))) {
		return safepoint.Choice{}, false
	}
	if !fileExists(filepath.Join(p.Module.Dir, "go.mod")) {
		// A module from before modules (github.com/pkg/errors v0.9.1): a
		// directory that replaces it needs a go.mod, which the go command
		// otherwise makes up. It keeps its code as it is.
		return safepoint.Choice{}, false
	}
	return safepoint.Select(p.Module.Path, p.ImportPath), true
}

// cachedSafepoints redirects the modules of pkgs that are compiled from
// links (cachedModuleSafepoints) and gives the packages that get checks
// their overlay. It reports whether anything
// changed: a listing that built pkgs must then be made again.
func (b *Builder) cachedSafepoints(ctx context.Context, pkgs []*listed) (bool, error) {
	modcache, err := b.modcacheDir(ctx)
	if err != nil {
		return false, fmt.Errorf("interrupt checks: %w", err)
	}
	s := &b.modSP
	type redirect struct{ key, link, target string }
	var todo []redirect
	var rewrite []*listed
	s.mu.Lock()
	if s.redirected == nil {
		s.redirected, s.replace, s.looked, s.pkgs = map[string]string{}, map[string]string{}, map[string]bool{}, map[string]SafepointPackage{}
	}
	root := s.linkRoot(modcache)
	for _, p := range pkgs {
		ch, ok := b.cachedModuleSafepoints(p, modcache)
		if !ok {
			continue
		}
		esc, err := module.EscapePath(p.Module.Path)
		if err != nil {
			continue
		}
		escV, err := module.EscapeVersion(p.Module.Version)
		if err != nil {
			continue
		}
		// A package listed through a link (a kept listing, another
		// process's) is where the module cache keeps its module all the
		// same: this Builder links to that.
		key := p.Module.Path + "@" + p.Module.Version
		link := filepath.Join(root, esc+"@"+escV)
		if s.redirected[key] != link {
			s.redirected[key] = link
			todo = append(todo, redirect{key, link, filepath.Join(modcache, esc+"@"+escV)})
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p.Dir, p.Module.Dir), string(filepath.Separator))
		q := *p
		q.Dir = filepath.Join(link, rel)
		rewrite = append(rewrite, &q)
		if !ch.Rewrite {
			continue
		}
		s.pkgs[p.ImportPath] = SafepointPackage{Module: p.Module.Path, Version: p.Module.Version, ImportPath: p.ImportPath,
			Name: p.Name, Rel: filepath.ToSlash(rel), GoFiles: p.GoFiles}
	}
	s.mu.Unlock()
	for _, r := range todo {
		if !fileExists(filepath.Join(r.target, "go.mod")) {
			// Not in this module cache (a State from another machine).
			if err := b.mod.goCmd(ctx, io.Discard, nil, "mod", "download", r.key); err != nil {
				return false, fmt.Errorf("interrupt checks for %s: %w", r.key, err)
			}
		}
		if err := linkTo(r.link, r.target); err != nil {
			return false, fmt.Errorf("interrupt checks for %s: %w", r.key, err)
		}
	}
	if len(todo) > 0 {
		args := []string{"mod", "edit"}
		for _, r := range todo {
			args = append(args, "-replace="+r.key+"="+r.link)
		}
		if err := b.mod.goCmd(ctx, io.Discard, nil, args...); err != nil {
			return false, fmt.Errorf("interrupt checks: %w", err)
		}
		b.modList = nil
	}
	added, err := b.rewriteForOverlay(rewrite, modcache)
	return len(todo) > 0 || added, err
}

// linkTo makes link a symbolic link to target (as it already may be).
func linkTo(link, target string) error {
	if cur, err := os.Readlink(link); err == nil && cur == target {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		return err
	}
	tmp := link + ".tmp" + fmt.Sprint(os.Getpid())
	_ = os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, link)
}

// rewriteForOverlay gives the packages (listed with their files under the
// links) rewritten copies in the overlay.
func (b *Builder) rewriteForOverlay(pkgs []*listed, modcache string) (bool, error) {
	s := &b.modSP
	s.mu.Lock()
	defer s.mu.Unlock()
	added := 0
	for _, p := range pkgs {
		ch, _ := b.cachedModuleSafepoints(p, modcache)
		if s.looked[p.Dir] || !ch.Rewrite {
			continue
		}
		s.looked[p.Dir] = true
		for _, f := range p.GoFiles {
			file := filepath.Join(p.Dir, f)
			src, err := os.ReadFile(file)
			if err != nil {
				return false, fmt.Errorf("interrupt checks for %s: %w", p.ImportPath, err)
			}
			out, changed, err := safepoint.Rewrite(file, src, ch.Funcs, ch.Strong)
			if err != nil || !changed {
				continue // the go command reports a file's own error
			}
			out = append([]byte("//line "+file+":1\n"), out...)
			sum := sha256.Sum256(out)
			cp := filepath.Join(s.dir, "overlay", hex.EncodeToString(sum[:2]), hex.EncodeToString(sum[:16])+".go")
			if !fileExists(cp) {
				if err := os.MkdirAll(filepath.Dir(cp), 0o755); err != nil {
					return false, fmt.Errorf("interrupt checks: %w", err)
				}
				if err := writeReplacing(cp, out, 0o644); err != nil {
					return false, fmt.Errorf("interrupt checks for %s: %w", p.ImportPath, err)
				}
			}
			if s.replace[file] != cp {
				s.replace[file] = cp
				added++
			}
		}
	}
	if added == 0 {
		return false, nil
	}
	keys := make([]string, 0, len(s.replace))
	for k := range s.replace {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	ordered := make(map[string]string, len(keys))
	for _, k := range keys {
		ordered[k] = s.replace[k]
	}
	data, err := json.Marshal(struct{ Replace map[string]string }{ordered})
	if err != nil {
		return false, err
	}
	sum := sha256.Sum256(data)
	file := filepath.Join(s.dir, "overlay-"+hex.EncodeToString(sum[:8])+".json")
	if !fileExists(file) {
		if err := writeReplacing(file, data, 0o644); err != nil {
			return false, fmt.Errorf("interrupt checks: %w", err)
		}
	}
	s.file = file
	return true, nil
}

// relistWithSafepoints gives the packages of a listing their checks: when
// the listing brought packages that get them, it is made again (args,
// then the overlay, then targets).
func (b *Builder) relistWithSafepoints(ctx context.Context, pkgs []*listed, args, targets []string) ([]*listed, error) {
	for range 3 {
		changed, err := b.cachedSafepoints(ctx, pkgs)
		if err != nil || !changed {
			return pkgs, err
		}
		var out bytes.Buffer
		call := append(append(append([]string(nil), args...), b.modSP.overlayFlag()...), targets...)
		if err := b.mod.goCmd(ctx, &out, nil, call...); err != nil {
			return nil, err
		}
		if pkgs, err = decodeListed(&out); err != nil {
			return nil, err
		}
	}
	return pkgs, nil
}

// safepointPackages lists the packages compiled with interrupt checks.
func (b *Builder) safepointPackages() []SafepointPackage {
	s := &b.modSP
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]SafepointPackage, 0, len(s.pkgs))
	for _, p := range s.pkgs {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ImportPath < out[j].ImportPath })
	return out
}

// adoptSafepoints gives this Builder's session module (just replaced by
// another Builder's) the links and the overlay of pkgs, the other
// Builder's packages with checks: links of another machine's are replaced
// by this machine's, fetching modules this module cache lacks.
func (b *Builder) adoptSafepoints(ctx context.Context, pkgs []SafepointPackage) error {
	modcache, err := b.modcacheDir(ctx)
	if err != nil {
		return fmt.Errorf("interrupt checks: %w", err)
	}
	ej, err := b.mod.edits(ctx)
	if err != nil {
		return err
	}
	s := &b.modSP
	root := s.linkRoot(modcache)
	args := []string{"mod", "edit"}
	for _, r := range ej.Replace {
		if isSafepointLink(r.New.Path) && !strings.HasPrefix(r.New.Path, root+string(filepath.Separator)) {
			args = append(args, "-dropreplace="+r.Old.Path+"@"+r.Old.Version)
		}
	}
	if len(args) > 2 {
		if err := b.mod.goCmd(ctx, io.Discard, nil, args...); err != nil {
			return fmt.Errorf("interrupt checks: %w", err)
		}
	}
	s.mu.Lock()
	s.redirected = nil // the go.mod is another's: every link is made again
	s.mu.Unlock()
	var listedPkgs []*listed
	for _, p := range pkgs {
		esc, err := module.EscapePath(p.Module)
		if err != nil {
			return fmt.Errorf("interrupt checks for %s: %w", p.ImportPath, err)
		}
		escV, err := module.EscapeVersion(p.Version)
		if err != nil {
			return fmt.Errorf("interrupt checks for %s: %w", p.ImportPath, err)
		}
		dir := filepath.Join(modcache, esc+"@"+escV)
		if !fileExists(filepath.Join(dir, "go.mod")) {
			if err := b.mod.goCmd(ctx, io.Discard, nil, "mod", "download", p.Module+"@"+p.Version); err != nil {
				return fmt.Errorf("interrupt checks for %s: %w", p.ImportPath, err)
			}
		}
		listedPkgs = append(listedPkgs, &listed{ImportPath: p.ImportPath, Name: p.Name, GoFiles: p.GoFiles,
			Dir:    filepath.Join(dir, filepath.FromSlash(p.Rel)),
			Module: &listedModule{Path: p.Module, Version: p.Version, Dir: dir}})
	}
	_, err = b.cachedSafepoints(ctx, listedPkgs)
	return err
}
