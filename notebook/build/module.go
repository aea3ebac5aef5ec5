package build

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// sessionModule is the module the Builder resolves and builds packages in:
// it requires goaccel from the kernel's source (hence every dependency at
// the kernel's version) and whatever cells add.
type sessionModule struct {
	dir  string
	tc   *Toolchain
	host Host
	env  []string
}

// sessionModulePath is the module path of the session module.
const sessionModulePath = "goaccel.session"

func newSessionModule(dir string, tc *Toolchain, host Host) (*sessionModule, error) {
	m := &sessionModule{dir: dir, tc: tc, host: host}
	m.env = m.environ()
	goVersion := strings.TrimPrefix(tc.Version, "go")
	if i := strings.IndexAny(goVersion, " -"); i > 0 {
		goVersion = goVersion[:i]
	}
	mod := fmt.Sprintf("module %s\n\ngo %s\n\nrequire %s v0.0.0-00010101000000-000000000000\n\nreplace %s => %s\n",
		sessionModulePath, goVersion, ModulePath, ModulePath, host.SourceDir)
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

// environ is the go command's environment: the user's (GOPROXY, GOPRIVATE,
// GOFLAGS and the rest are honoured), with missing requirements added to
// the session module on demand and go.work files ignored.
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

// goCmd runs the go command in the session module.
func (m *sessionModule) goCmd(ctx context.Context, stdout io.Writer, args ...string) error {
	cmd := exec.CommandContext(ctx, m.tc.Go, args...)
	cmd.Dir = m.dir
	cmd.Env = m.env
	var stderr bytes.Buffer
	cmd.Stdout = stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("go %s: %s", args[0], msg)
	}
	return nil
}

// GoMod returns the session module's go.mod.
func (m *sessionModule) goMod() (string, error) {
	b, err := os.ReadFile(filepath.Join(m.dir, "go.mod"))
	return string(b), err
}

// moduleVersions lists the modules of the build list: path → version.
func (m *sessionModule) moduleVersions(ctx context.Context) (map[string]string, error) {
	var out bytes.Buffer
	if err := m.goCmd(ctx, &out, "list", "-m", "-json", "all"); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(&out)
	vers := map[string]string{}
	for {
		var mod struct {
			Path, Version string
			Replace       *struct{ Path, Version string }
		}
		if err := dec.Decode(&mod); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		v := mod.Version
		if mod.Replace != nil {
			v = mod.Replace.Path + "@" + mod.Replace.Version
		}
		vers[mod.Path] = v
	}
	return vers, nil
}

// guard runs change (which may edit go.mod) and undoes it when it moved a
// module the kernel links to another version: the kernel's copy of that
// module and a plugin's would differ, which Go refuses.
func (m *sessionModule) guard(ctx context.Context, what string, change func() error) error {
	modFile, sumFile := filepath.Join(m.dir, "go.mod"), filepath.Join(m.dir, "go.sum")
	oldMod, _ := os.ReadFile(modFile)
	oldSum, _ := os.ReadFile(sumFile)
	restore := func() {
		_ = os.WriteFile(modFile, oldMod, 0o644)
		_ = os.WriteFile(sumFile, oldSum, 0o644)
	}
	before, err := m.moduleVersions(ctx)
	if err != nil {
		return err
	}
	if err := change(); err != nil {
		restore()
		return err
	}
	after, err := m.moduleVersions(ctx)
	if err != nil {
		restore()
		return err
	}
	var moved []string
	for p, v := range before {
		if p == sessionModulePath {
			continue
		}
		if nv, ok := after[p]; ok && nv != v {
			moved = append(moved, fmt.Sprintf("%s %s → %s", p, v, nv))
		}
	}
	if len(moved) > 0 {
		sort.Strings(moved)
		restore()
		return fmt.Errorf("%s needs a version of a module the kernel is built with that differs from the kernel's (%s); "+
			"a notebook can only use the kernel's version of such a module: pick a version of %s that works with it (%%go get module@version), or rebuild goaccel with the newer version",
			what, strings.Join(moved, ", "), what)
	}
	return nil
}

// get runs `go get` for a module query (mod@version), refusing changes to
// the kernel's own dependencies.
func (m *sessionModule) get(ctx context.Context, query string) error {
	return m.guard(ctx, query, func() error {
		return m.goCmd(ctx, io.Discard, append([]string{"get"}, append(m.buildFlags(), query)...)...)
	})
}

// use makes the module in dir importable (a replace directive to it).
func (m *sessionModule) use(ctx context.Context, dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(abs, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("%%use %s: no go.mod in %s: a local module needs one (go mod init NAME)", dir, abs)
	}
	path := ""
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "module" {
			path = strings.Trim(f[1], `"`)
		}
	}
	if path == "" {
		return "", fmt.Errorf("%%use %s: %s/go.mod declares no module path", dir, abs)
	}
	if path == ModulePath {
		return "", fmt.Errorf("%%use %s: that is goaccel itself, which the kernel already links", dir)
	}
	err = m.guard(ctx, path, func() error {
		return m.goCmd(ctx, io.Discard, "mod", "edit", "-replace", path+"="+abs, "-require", path+"@v0.0.0-00010101000000-000000000000")
	})
	return path, err
}
