// Package modtest gives tests a hermetic Go module environment: a
// file-based module proxy (GOPROXY=file://...) built from module source
// trees in testdata, and a private module cache, so that tests of fetching
// modules never reach the network.
package modtest

import (
	"archive/zip"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Proxy builds a module proxy from src, whose directories are named
// MODULE@VERSION (module paths with slashes: src/example.com/m@v1.0.0),
// and returns its directory.
func Proxy(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	versions := map[string][]string{}
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() || !strings.Contains(d.Name(), "@") {
			return nil
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		mod, ver, _ := strings.Cut(filepath.ToSlash(rel), "@")
		if err := addVersion(dst, path, mod, ver); err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		versions[mod] = append(versions[mod], ver)
		return filepath.SkipDir
	})
	if err != nil {
		t.Fatal(err)
	}
	for mod, vs := range versions {
		sort.Strings(vs)
		if err := os.WriteFile(filepath.Join(dst, mod, "@v", "list"), []byte(strings.Join(vs, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// addVersion writes the .info, .mod and .zip files of one module version.
func addVersion(dst, dir, mod, ver string) error {
	at := filepath.Join(dst, mod, "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		return err
	}
	info := fmt.Sprintf(`{"Version":%q,"Time":"2024-01-01T00:00:00Z"}`, ver)
	if err := os.WriteFile(filepath.Join(at, ver+".info"), []byte(info), 0o644); err != nil {
		return err
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(at, ver+".mod"), gomod, 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(at, ver+".zip"))
	if err != nil {
		return err
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		w, err := zw.Create(mod + "@" + ver + "/" + filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	})
	if err != nil {
		return err
	}
	return zw.Close()
}

// Env makes the go command of this test (and of what it starts) fetch
// modules from the proxy at dir only, falling back to the module cache of
// this machine for everything else (goaccel's own dependencies), with a
// private module cache and no checksum database.
func Env(t testing.TB, proxy string) {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOMODCACHE: %v", err)
	}
	real := filepath.Join(strings.TrimSpace(string(out)), "cache", "download")
	t.Setenv("GOPROXY", "file://"+filepath.ToSlash(proxy)+",file://"+filepath.ToSlash(real))
	t.Setenv("GOSUMDB", "off")
	t.Setenv("GONOSUMDB", "")
	t.Setenv("GOPRIVATE", "")
	t.Setenv("GOMODCACHE", t.TempDir())
	t.Setenv("GOFLAGS", strings.TrimSpace(os.Getenv("GOFLAGS")+" -modcacherw"))
}

// CopyDir copies the tree at src to a new temporary directory and returns
// it (for tests that edit a module's source).
func CopyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}
