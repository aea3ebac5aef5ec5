package gomlx

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/pjrt"
)

// The GoMLX this test binary links is the one goaccel requires, and a
// source path of another version is recognised as such.
func TestGoMLXVersion(t *testing.T) {
	if v := linkedGoMLXVersion(); v != GoMLXVersion {
		t.Fatalf("linked GoMLX version %q, want %s", v, GoMLXVersion)
	}
	if err := checkVersion(); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/root/go/pkg/mod/github.com/gomlx/gomlx@v0.27.1/pkg/core/graph/node.go": "v0.27.1",
		"github.com/gomlx/gomlx@v0.26.0/pkg/core/graph/ops.go":                   "v0.26.0",
		"/home/me/src/gomlx/pkg/core/graph/ops.go":                               "",
	} {
		got := ""
		if m := moduleVersion.FindStringSubmatch(path); m != nil {
			got = m[1]
		}
		if got != want {
			t.Errorf("%s: version %q, want %q", path, got, want)
		}
	}
}

// The backend is chosen by GOMLX_BACKEND, then the plugins found, then
// the pure-Go fallback with the reason.
func TestChooseBackend(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(pjrt.EnvBackend, "")
	os.Unsetenv(pjrt.EnvBackend)
	t.Setenv(pjrt.EnvLibraryPath, dir)
	if c := ChooseBackend("cpu"); c.Config != "go" || !strings.Contains(c.Why, "no PJRT CPU plugin was found") {
		t.Errorf("without plugins: %+v", c)
	}
	if c := ChooseBackend("cuda:0"); c.Config != "go" || !strings.Contains(c.Why, "jax[cuda12]") {
		t.Errorf("a GPU without plugins: %+v", c)
	}
	if err := os.WriteFile(filepath.Join(dir, pjrt.FileName("cpu")), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c := ChooseBackend("cuda:0"); c.Config != "xla:cpu" || c.Plugin != filepath.Join(dir, pjrt.FileName("cpu")) ||
		!strings.Contains(c.Why, "no PJRT CUDA plugin was found for cuda:0") || !strings.Contains(c.Why, "jax[cuda12]") {
		t.Errorf("a GPU with the CPU plugin only (the fallback is said): %+v", c)
	}
	if err := os.WriteFile(filepath.Join(dir, pjrt.FileName("cuda")), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c := ChooseBackend("cuda:0"); c.Config != "xla:cuda" {
		t.Errorf("a GPU with the CUDA plugin: %+v", c)
	}
	if c := ChooseBackend("cpu"); c.Config != "xla:cpu" {
		t.Errorf("a CPU with both plugins: %+v", c)
	}
	t.Setenv(pjrt.EnvBackend, "go")
	if c := ChooseBackend("cpu"); c.Config != "go" || c.Why != "GOMLX_BACKEND=go" {
		t.Errorf("GOMLX_BACKEND=go: %+v", c)
	}
	// A plugin that is not one is a clear error, not a crash.
	t.Setenv(pjrt.EnvBackend, "")
	os.Unsetenv(pjrt.EnvBackend)
	if _, err := Backend("cpu", 0); err == nil || !strings.Contains(err.Error(), `backend "xla:cpu"`) {
		t.Errorf("a broken plugin file: %v", err)
	}
}
