// Package kernelspec installs and removes goaccel's Jupyter kernelspec: the
// kernel.json that tells Jupyter how to start the kernel, plus its logos, in
// the directory Jupyter searches for the chosen scope (user, sys-prefix or an
// explicit prefix), following jupyter_core's path conventions; and
// goaccel's nbconvert exporter in that scope's Python environment
// (nbconvert.go).
package kernelspec

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
)

//go:embed logo/*
var logos embed.FS

// DefaultName is the kernel name Jupyter lists ("jupyter kernelspec list").
const DefaultName = "goaccel"

// DefaultDisplayName is what the notebook's kernel picker shows.
const DefaultDisplayName = "Go (goaccel)"

// Scope says where a kernelspec goes.
type Scope int

// The install scopes jupyter itself offers.
const (
	// User installs under the user's Jupyter data directory.
	User Scope = iota
	// SysPrefix installs under the active Python environment's prefix.
	SysPrefix
	// Prefix installs under an explicit prefix (Options.Prefix).
	Prefix
)

// Options describe one install or uninstall.
type Options struct {
	Scope       Scope
	Prefix      string // for Scope Prefix
	Name        string // kernel name; DefaultName when empty
	DisplayName string // DefaultDisplayName when empty
	// Executable is the absolute path of the goaccel binary to put in argv.
	Executable string
	// Env is added to kernel.json's "env".
	Env map[string]string
}

// Spec is the content of kernel.json.
type Spec struct {
	Argv          []string          `json:"argv"`
	DisplayName   string            `json:"display_name"`
	Language      string            `json:"language"`
	InterruptMode string            `json:"interrupt_mode"`
	Env           map[string]string `json:"env,omitempty"`
	Metadata      map[string]any    `json:"metadata,omitempty"`
}

var validName = regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)

func (o Options) name() (string, error) {
	if o.Name == "" {
		return DefaultName, nil
	}
	if !validName.MatchString(o.Name) {
		return "", fmt.Errorf("kernel name %q is invalid: use only letters, digits, '.', '_' and '-'", o.Name)
	}
	return o.Name, nil
}

// KernelsDir returns the "kernels" directory for the scope in o.
func KernelsDir(o Options) (string, error) {
	switch o.Scope {
	case User:
		d, err := UserDataDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(d, "kernels"), nil
	case SysPrefix:
		p, err := sysPrefix()
		if err != nil {
			return "", err
		}
		return filepath.Join(p, "share", "jupyter", "kernels"), nil
	case Prefix:
		if o.Prefix == "" {
			return "", errors.New("--prefix needs a directory")
		}
		abs, err := filepath.Abs(o.Prefix)
		if err != nil {
			return "", fmt.Errorf("resolving prefix %q: %w", o.Prefix, err)
		}
		return filepath.Join(abs, "share", "jupyter", "kernels"), nil
	}
	return "", fmt.Errorf("unknown install scope %d", o.Scope)
}

// UserDataDir is Jupyter's per-user data directory: $JUPYTER_DATA_DIR, else
// the platform default jupyter_core uses.
func UserDataDir() (string, error) {
	if d := os.Getenv("JUPYTER_DATA_DIR"); d != "" {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the home directory for the Jupyter data dir: %w", err)
	}
	switch runtime.GOOS {
	case "darwin":
		return filepath.Join(home, "Library", "Jupyter"), nil
	case "windows":
		if a := os.Getenv("APPDATA"); a != "" {
			return filepath.Join(a, "jupyter"), nil
		}
	}
	if x := os.Getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "jupyter"), nil
	}
	return filepath.Join(home, ".local", "share", "jupyter"), nil
}

// sysPrefix finds the active Python environment the way a user expects:
// an activated virtualenv or conda env, else the prefix of python3 on PATH.
func sysPrefix() (string, error) {
	for _, k := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if v := os.Getenv(k); v != "" {
			return v, nil
		}
	}
	out, err := exec.Command("python3", "-c", "import sys; print(sys.prefix)").Output()
	if err != nil {
		return "", fmt.Errorf("--sys-prefix: no VIRTUAL_ENV or CONDA_PREFIX set and python3 could not tell its sys.prefix: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Install writes the kernelspec and returns its directory.
func Install(o Options) (string, error) {
	name, err := o.name()
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(o.Executable) {
		return "", fmt.Errorf("kernelspec argv needs an absolute executable path, got %q", o.Executable)
	}
	kernels, err := KernelsDir(o)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(kernels, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating kernelspec directory: %w", err)
	}
	spec := Spec{
		Argv:          []string{o.Executable, "kernel", "-f", "{connection_file}"},
		DisplayName:   o.DisplayName,
		Language:      "go",
		InterruptMode: "message",
		Env:           o.Env,
		Metadata:      map[string]any{"debugger": true}, // JupyterLab offers its debugger only then
	}
	if spec.DisplayName == "" {
		spec.DisplayName = DefaultDisplayName
	}
	b, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encoding kernel.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kernel.json"), append(b, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("writing kernel.json: %w", err)
	}
	entries, err := fs.ReadDir(logos, "logo")
	if err != nil {
		return "", fmt.Errorf("reading embedded logos: %w", err)
	}
	for _, e := range entries {
		data, err := logos.ReadFile("logo/" + e.Name())
		if err != nil {
			return "", fmt.Errorf("reading embedded %s: %w", e.Name(), err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644); err != nil {
			return "", fmt.Errorf("writing %s: %w", e.Name(), err)
		}
	}
	return dir, nil
}

// Uninstall removes the kernelspec for o's scope and name and returns the
// directory it removed.
func Uninstall(o Options) (string, error) {
	name, err := o.name()
	if err != nil {
		return "", err
	}
	kernels, err := KernelsDir(o)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(kernels, name)
	if _, err := os.Stat(filepath.Join(dir, "kernel.json")); err != nil {
		return "", fmt.Errorf("no kernelspec %q in %s: %w", name, kernels, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("removing %s: %w", dir, err)
	}
	return dir, nil
}

// ParseEnv turns KEY=VALUE strings into a map, rejecting malformed entries.
func ParseEnv(pairs []string) (map[string]string, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	env := make(map[string]string, len(pairs))
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--env %q: want KEY=VALUE", p)
		}
		env[k] = v
	}
	return env, nil
}

// Files lists the files an installed kernelspec directory holds, sorted.
func Files(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, nil
}
