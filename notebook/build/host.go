package build

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
)

// SourceDir is the root of the goaccel module the kernel was built from.
// `make build` sets it with -ldflags "-X ...build.SourceDir=DIR"; without it
// the directory is taken from the paths compiled into the binary (absent
// with -trimpath).
var SourceDir string

// ModulePath is goaccel's module path.
const ModulePath = "github.com/goaccel/goaccel"

// Unavailable says why cells cannot be compiled here.
type Unavailable struct{ Reason string }

func (u *Unavailable) Error() string { return "compiled cells are unavailable: " + u.Reason }

// Host is the build configuration of the running kernel, which plugins must
// match.
type Host struct {
	GoVersion string // runtime.Version()
	GOOS      string
	GOARCH    string
	GOAMD64   string
	CGO       bool
	Tags      string // -tags
	Trimpath  bool
	Race      bool
	SourceDir string // goaccel's module root
	// Deps are the modules linked into the process that loads the plugins
	// (path → version, "dir" or "path@version" for a replaced module):
	// cells may only use these versions of them.
	Deps map[string]string
}

// CurrentHost describes this process.
func CurrentHost() (Host, error) {
	h := Host{GoVersion: runtime.Version(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, GOAMD64: "v1"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return h, &Unavailable{"the kernel binary carries no build information"}
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "CGO_ENABLED":
			h.CGO = s.Value == "1"
		case "GOAMD64":
			h.GOAMD64 = s.Value
		case "-tags":
			h.Tags = s.Value
		case "-trimpath":
			h.Trimpath = s.Value == "true"
		case "-race":
			h.Race = s.Value == "true"
		}
	}
	h.Deps = map[string]string{}
	for _, d := range bi.Deps {
		h.Deps[d.Path] = moduleVersion(d.Version, d.Replace)
	}
	dir, err := sourceDir()
	if err != nil {
		return h, err
	}
	h.SourceDir = dir
	return h, nil
}

// moduleVersion is how Host.Deps and the session's build list write a
// module's version: its version, or where it is replaced to.
func moduleVersion(version string, replace *debug.Module) string {
	if replace == nil {
		return version
	}
	if replace.Version == "" {
		return replace.Path
	}
	return replace.Path + "@" + replace.Version
}

// sourceDir finds goaccel's module root.
func sourceDir() (string, error) {
	if SourceDir != "" {
		if isGoaccelRoot(SourceDir) {
			return SourceDir, nil
		}
		return "", &Unavailable{fmt.Sprintf("the goaccel source the kernel was built from (%s) is gone; rebuild and reinstall the kernel (make build, goaccel install)", SourceDir)}
	}
	_, file, _, ok := runtime.Caller(0)
	if ok && filepath.IsAbs(file) {
		// file is <root>/notebook/build/host.go
		root := filepath.Dir(filepath.Dir(filepath.Dir(file)))
		if isGoaccelRoot(root) {
			return root, nil
		}
	}
	return "", &Unavailable{"the kernel does not know where its goaccel source is (built with -trimpath and without -X " + ModulePath + "/notebook/build.SourceDir); rebuild it with make build"}
}

func isGoaccelRoot(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "module" && f[1] == ModulePath {
			return true
		}
	}
	return false
}

// Toolchain is the installed go command and its environment.
type Toolchain struct {
	Go      string // path of the go command
	Version string // GOVERSION
	ToolDir string // GOTOOLDIR: compile, link
	CC      string
	Env     map[string]string // go env
}

// FindToolchain locates `go` (GOACCEL_GO, then PATH, then GOROOT/bin) and
// reads its environment.
func FindToolchain(ctx context.Context) (*Toolchain, error) {
	candidates := []string{os.Getenv("GOACCEL_GO")}
	if p, err := exec.LookPath("go"); err == nil {
		candidates = append(candidates, p)
	}
	candidates = append(candidates, filepath.Join(runtime.GOROOT(), "bin", "go"))
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if _, err := os.Stat(c); err != nil {
			continue
		}
		cmd := exec.CommandContext(ctx, c, "env", "-json")
		var out, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &stderr
		if err := cmd.Run(); err != nil {
			continue
		}
		env := map[string]string{}
		if err := json.Unmarshal(out.Bytes(), &env); err != nil {
			continue
		}
		return &Toolchain{Go: c, Version: env["GOVERSION"], ToolDir: env["GOTOOLDIR"], CC: env["CC"], Env: env}, nil
	}
	return nil, &Unavailable{"no Go toolchain found (install Go, put `go` on PATH or set GOACCEL_GO)"}
}

// Matches checks that t builds plugins the host can load.
func (t *Toolchain) Matches(h Host) error {
	switch {
	case h.GOOS != "linux" && h.GOOS != "darwin" && h.GOOS != "freebsd":
		return &Unavailable{"Go plugins are not supported on " + h.GOOS}
	case !h.CGO:
		return &Unavailable{"the kernel was built without cgo (CGO_ENABLED=0), and Go plugins need it"}
	case h.Race:
		return &Unavailable{"the kernel was built with -race"}
	case t.Version != h.GoVersion:
		return &Unavailable{fmt.Sprintf("the kernel was built with %s but `%s` is %s; rebuild the kernel with this toolchain (make build, goaccel install)", h.GoVersion, t.Go, t.Version)}
	case t.Env["CGO_ENABLED"] != "1":
		return &Unavailable{"cgo is disabled in the Go environment (CGO_ENABLED=" + t.Env["CGO_ENABLED"] + ")"}
	}
	if t.CC == "" {
		return &Unavailable{"no C compiler configured (go env CC), and linking a Go plugin needs one"}
	}
	cc := strings.Fields(t.CC)[0]
	if _, err := exec.LookPath(cc); err != nil {
		return &Unavailable{fmt.Sprintf("the C compiler %q is not installed, and linking a Go plugin needs it", cc)}
	}
	if t.ToolDir == "" {
		return &Unavailable{"go env GOTOOLDIR is empty"}
	}
	return nil
}
