package build

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// sessionModule is the module the Builder resolves and builds packages in:
// it requires goaccel from the kernel's source (hence every dependency at
// the kernel's version) and whatever cells add.
type sessionModule struct {
	dir  string
	tc   *Toolchain
	host Host
}

// sessionModulePath is the module path of the session module.
const sessionModulePath = "goaccel.session"

// SessionModule is the module path of the session module, the module
// whose packages hold the cells (go test's pkg: line names it for %test).
const SessionModule = sessionModulePath

// zeroVersion is the version a module replaced by a directory is required at.
const zeroVersion = "v0.0.0-00010101000000-000000000000"

func newSessionModule(dir string, tc *Toolchain, host Host) (*sessionModule, error) {
	m := &sessionModule{dir: dir, tc: tc, host: host}
	goVersion := strings.TrimPrefix(tc.Version, "go")
	if i := strings.IndexAny(goVersion, " -"); i > 0 {
		goVersion = goVersion[:i]
	}
	mod := fmt.Sprintf("module %s\n\ngo %s\n\nrequire %s %s\n\nreplace %s => %s\n",
		sessionModulePath, goVersion, ModulePath, zeroVersion, ModulePath, host.SourceDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644); err != nil {
		return nil, err
	}
	// goaccel's checksums, so that its dependencies verify offline.
	if sum, err := os.ReadFile(filepath.Join(host.SourceDir, "go.sum")); err == nil {
		if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// environ is the go command's environment: the user's as it is now (so
// GOPROXY, GOPRIVATE, GONOSUMDB, GOFLAGS set with %env count), with missing
// requirements added to the session module on demand and go.work files
// ignored (the Builder applies a notebook's go.work itself).
func (m *sessionModule) environ() []string {
	var env []string
	flags := ""
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "GOFLAGS":
			flags = v
			continue
		case "GOWORK", "GO111MODULE", "GOOS", "GOARCH", "CGO_ENABLED", "GOAMD64":
			continue
		}
		env = append(env, kv)
	}
	var kept []string
	for _, f := range strings.Fields(flags) {
		if !strings.HasPrefix(f, "-mod=") && !strings.HasPrefix(f, "-tags") && !strings.HasPrefix(f, "-race") && !strings.HasPrefix(f, "-trimpath") {
			kept = append(kept, f)
		}
	}
	kept = append(kept, "-mod=mod")
	return append(env, "GOFLAGS="+strings.Join(kept, " "), "GOWORK=off", "GO111MODULE=on",
		"GOOS="+m.host.GOOS, "GOARCH="+m.host.GOARCH, "GOAMD64="+m.host.GOAMD64, "CGO_ENABLED=1")
}

// buildFlags are the flags every go command gets so that packages are
// built as the kernel's were.
func (m *sessionModule) buildFlags() []string {
	var f []string
	if m.host.Tags != "" {
		f = append(f, "-tags="+m.host.Tags)
	}
	if m.host.Trimpath {
		f = append(f, "-trimpath")
	}
	return f
}

// goCmd runs the go command in the session module. Its stderr lines that
// say what it fetches ("go: downloading ...") go to progress when that is
// not nil.
func (m *sessionModule) goCmd(ctx context.Context, stdout io.Writer, progress func(string), args ...string) error {
	cmd := exec.CommandContext(ctx, m.tc.Go, args...)
	cmd.Dir = m.dir
	cmd.Env = m.environ()
	cmd.Stdout = stdout
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	var stderr bytes.Buffer
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 4<<20)
		for sc.Scan() {
			line := sc.Text()
			stderr.WriteString(line + "\n")
			if progress != nil && isFetchNote(line) {
				progress(line)
			}
		}
		_, _ = io.Copy(&stderr, pr)
	}()
	err := cmd.Run()
	pw.Close()
	wg.Wait()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		msg := strings.TrimSpace(stripFetchNotes(stderr.String()))
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("go %s: %s", args[0], strings.TrimPrefix(msg, "go: "))
	}
	return nil
}

// isFetchNote reports whether a line of the go command's stderr is a note
// on what it looks up or downloads (progress, not an error).
func isFetchNote(line string) bool {
	for _, p := range []string{"go: downloading ", "go: finding module for package ", "go: found ", "go: added ", "go: upgraded ", "go: downgraded ", "go: extracting "} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}

func stripFetchNotes(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !isFetchNote(l) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// relPath matches a file path the go command wrote relative to the
// session module (files of local modules).
var relPath = regexp.MustCompile(`(?:\.\./)+[^\s:]+`)

// absPaths makes the relative file paths in a go command message absolute.
func (m *sessionModule) absPaths(msg string) string {
	return relPath.ReplaceAllStringFunc(msg, func(p string) string { return filepath.Join(m.dir, p) })
}

// goMod returns the session module's go.mod.
func (m *sessionModule) goMod() (string, error) {
	b, err := os.ReadFile(filepath.Join(m.dir, "go.mod"))
	return string(b), err
}

// snapshot is the session module's go.mod and go.sum, to undo a change.
type snapshot struct{ mod, sum []byte }

func (m *sessionModule) snapshot() snapshot {
	mod, _ := os.ReadFile(filepath.Join(m.dir, "go.mod"))
	sum, _ := os.ReadFile(filepath.Join(m.dir, "go.sum"))
	return snapshot{mod, sum}
}

func (m *sessionModule) restore(s snapshot) {
	_ = os.WriteFile(filepath.Join(m.dir, "go.mod"), s.mod, 0o644)
	_ = os.WriteFile(filepath.Join(m.dir, "go.sum"), s.sum, 0o644)
}

// Move is a module a change would move from the version the process holds.
type Move struct {
	Module string
	Have   string // the version the kernel links or cells already loaded
	Want   string // the version the change needs
	Kernel bool   // the kernel links it (else cells of the session loaded it)
}

// ConflictError is a change to the session module (%go get, %use, a first
// import) that needs another version of a module the process already holds:
// one the kernel is built with, or one whose packages cells already loaded.
// A Go process holds one version of a package, so the change is undone.
type ConflictError struct {
	What   string // what asked for it: `%go get m@v`, `import "p"`, `%use DIR`
	Module string // the module whose version was chosen ("" for %use)
	Moves  []Move
}

func (e *ConflictError) Error() string {
	var b strings.Builder
	var kernel, loaded []string
	var rebuild string
	for _, mv := range e.Moves {
		if mv.Kernel {
			kernel = append(kernel, fmt.Sprintf("%s %s (the kernel is built with %s)", mv.Module, mv.Want, mv.Have))
			if rebuild == "" {
				rebuild = mv.Module + "@" + mv.Want
			}
		} else {
			loaded = append(loaded, fmt.Sprintf("%s %s (cells already loaded %s)", mv.Module, mv.Want, mv.Have))
		}
	}
	fmt.Fprintf(&b, "version conflict: %s needs %s", e.What, strings.Join(append(kernel, loaded...), ", "))
	if len(kernel) > 0 {
		b.WriteString("; a notebook can only use the kernel's version of a module the kernel is built with: ")
		if e.Module != "" {
			fmt.Fprintf(&b, "pick a version of %s that works with it (%%go get %s@VERSION, before the first import), ", e.Module, e.Module)
		} else {
			b.WriteString("make the module require the kernel's version, ")
		}
		fmt.Fprintf(&b, "or rebuild goaccel with the newer version (go get %s in goaccel's source, then make build)", rebuild)
	}
	if len(loaded) > 0 {
		b.WriteString("; cells of this session already loaded the other version, and a Go process cannot load a second version of a package: " +
			"restart the kernel and run %go get before the first import")
	}
	return b.String()
}

func modulePart(query string) string {
	p, _, _ := strings.Cut(query, "@")
	return p
}

// checkVersions compares the build list with the versions the process
// holds: the kernel's modules and pinned (module → version cells loaded).
func (m *sessionModule) checkVersions(ctx context.Context, what, module string, pinned map[string]string) error {
	list, err := m.listModules(ctx, nil)
	if err != nil {
		return err
	}
	return m.checkListed(list, what, module, pinned)
}

// checkListed is checkVersions on a build list already listed.
func (m *sessionModule) checkListed(list []listedModule, what, module string, pinned map[string]string) error {
	after := versionsOf(list)
	var moves []Move
	for p, v := range after {
		if p == sessionModulePath || p == ModulePath {
			continue
		}
		if have, ok := m.host.Deps[p]; ok && have != v {
			moves = append(moves, Move{Module: p, Have: have, Want: v, Kernel: true})
		} else if have, ok := pinned[p]; ok && have != v {
			moves = append(moves, Move{Module: p, Have: have, Want: v})
		}
	}
	if len(moves) == 0 {
		return nil
	}
	sort.Slice(moves, func(i, j int) bool { return moves[i].Module < moves[j].Module })
	return &ConflictError{What: what, Module: module, Moves: moves}
}

// guard runs change (which may edit go.mod) and undoes it when the build
// list then holds another version of a module the process holds. A change
// that lists the build list itself returns it, and guard checks that list
// rather than listing again.
func (m *sessionModule) guard(ctx context.Context, what, module string, pinned map[string]string, change func() ([]listedModule, error)) error {
	before := m.snapshot()
	list, err := change()
	if err != nil {
		m.restore(before)
		return err
	}
	if after := m.snapshot(); bytes.Equal(after.mod, before.mod) {
		return nil
	}
	if list == nil {
		if list, err = m.listModules(ctx, nil); err != nil {
			m.restore(before)
			return err
		}
	}
	if err := m.checkListed(list, what, module, pinned); err != nil {
		m.restore(before)
		return err
	}
	return nil
}

// get runs `go get` for module queries (mod@version), refusing changes to
// the versions the process holds.
func (m *sessionModule) get(ctx context.Context, queries []string, pinned map[string]string, progress func(string)) error {
	what := "%go get " + strings.Join(queries, " ")
	// A version asked for outright of a module the process holds: refused
	// before the go command tries (lowering a module goaccel requires would
	// make it look for other versions of goaccel).
	var moves []Move
	for _, q := range queries {
		mod, v, _ := strings.Cut(q, "@")
		if !isVersion(v) && v != "none" {
			continue
		}
		if have, ok := m.host.Deps[mod]; ok && have != v {
			moves = append(moves, Move{Module: mod, Have: have, Want: v, Kernel: true})
		} else if have, ok := pinned[mod]; ok && have != v {
			moves = append(moves, Move{Module: mod, Have: have, Want: v})
		}
	}
	if len(moves) > 0 {
		return &ConflictError{What: what, Module: modulePart(queries[0]), Moves: moves}
	}
	return m.guard(ctx, what, modulePart(queries[0]), pinned, func() ([]listedModule, error) {
		err := m.goCmd(ctx, io.Discard, progress, append(append([]string{"get"}, m.buildFlags()...), queries...)...)
		if err != nil && ctx.Err() == nil {
			if strings.Contains(err.Error(), "module "+ModulePath+":") {
				return nil, fmt.Errorf("%s would change what goaccel itself requires, and cells can only use the versions the kernel is built with of the modules goaccel requires: %w", what, err)
			}
			return nil, diagnose(modulePart(queries[0]), err)
		}
		return nil, err
	})
}

// isVersion reports whether v is a complete semantic version (v1.2.3,
// v1.2.3-pre, v0.0.0-2024...-abcdef), not a query such as latest or v1.2.
func isVersion(v string) bool {
	if !strings.HasPrefix(v, "v") {
		return false
	}
	core, _, _ := strings.Cut(strings.SplitN(v[1:], "+", 2)[0], "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return false
	}
	for _, p := range parts {
		if p == "" || strings.Trim(p, "0123456789") != "" {
			return false
		}
	}
	return true
}

// readModulePath returns the module path declared by dir/go.mod.
func readModulePath(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("no go.mod in %s: a local module needs one (go mod init NAME)", dir)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], "\"`"), nil
		}
	}
	return "", fmt.Errorf("%s/go.mod declares no module path", dir)
}

// use makes the module in dir importable (a replace directive to it) and
// returns its module path.
func (m *sessionModule) use(ctx context.Context, dir string, pinned map[string]string, progress func(string)) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	path, err := readModulePath(abs)
	if err != nil {
		return "", err
	}
	if path == ModulePath {
		return "", fmt.Errorf("%s is goaccel itself, which the kernel already links", abs)
	}
	err = m.guard(ctx, "the local module "+path+" ("+abs+")", "", pinned, func() ([]listedModule, error) {
		if err := m.dropLinks(ctx, path); err != nil {
			return nil, err
		}
		err := m.goCmd(ctx, io.Discard, progress, "mod", "edit", "-replace", path+"="+abs, "-require", path+"@"+zeroVersion)
		if err != nil {
			return nil, err
		}
		// The local module's own requirements join the build list (and are
		// fetched when missing). With -e, a module whose go.mod cannot be
		// looked up (offline: the test-only requirements of a dependency,
		// which no package of the session needs) does not fail the use;
		// only an error about the local module itself does, named as it is.
		list, err := m.listModules(ctx, progress)
		if err != nil {
			if ctx.Err() == nil {
				return nil, diagnose(path, err)
			}
			return nil, err
		}
		for _, mod := range list {
			if mod.Path == path && mod.Error != nil {
				return nil, diagnose(path, errors.New(mod.Error.Err))
			}
		}
		return list, nil
	})
	return path, err
}

// replace adds a replace directive (a go.work's) to the session module.
func (m *sessionModule) replace(ctx context.Context, old, new string, pinned map[string]string) error {
	return m.guard(ctx, "replace "+old+" => "+new, "", pinned, func() ([]listedModule, error) {
		if err := m.dropLinks(ctx, modulePart(old)); err != nil {
			return nil, err
		}
		return nil, m.goCmd(ctx, io.Discard, nil, "mod", "edit", "-replace", old+"="+new)
	})
}

// dropLinks drops the replacements of module path by links made for
// interrupt checks (modsafepoints.go): they name a version, and a replace
// directive naming a version wins over the user's for every version.
func (m *sessionModule) dropLinks(ctx context.Context, path string) error {
	ej, err := m.edits(ctx)
	if err != nil {
		return err
	}
	args := []string{"mod", "edit"}
	for _, r := range ej.Replace {
		if r.Old.Path == path && isSafepointLink(r.New.Path) {
			args = append(args, "-dropreplace="+r.Old.Path+"@"+r.Old.Version)
		}
	}
	if len(args) == 2 {
		return nil
	}
	return m.goCmd(ctx, io.Discard, nil, args...)
}

// requires lists the requirements of a go.mod text: path → version.
func requires(gomod string) map[string]string {
	out := map[string]string{}
	inBlock := false
	for _, l := range strings.Split(gomod, "\n") {
		l = strings.TrimSpace(l)
		if i := strings.Index(l, "//"); i >= 0 {
			l = strings.TrimSpace(l[:i])
		}
		switch {
		case l == "require (":
			inBlock = true
			continue
		case inBlock && l == ")":
			inBlock = false
			continue
		}
		f := strings.Fields(l)
		if inBlock && len(f) == 2 {
			out[f[0]] = f[1]
		} else if len(f) == 3 && f[0] == "require" {
			out[f[1]] = f[2]
		}
	}
	return out
}
