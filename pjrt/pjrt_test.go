package pjrt

import (
	"os"
	"path/filepath"
	"testing"
)

func writeFile(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("not really a library"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// A wheel in a virtualenv is linked under go-xla's name, and the
// environment points GoMLX at the link.
func TestConfigureLinksTheWheel(t *testing.T) {
	venv := t.TempDir()
	lib := filepath.Join(venv, "lib", "python3.11", "site-packages", "fastatomstruct_xla_cpu", "libpjrt_cpu.so")
	writeFile(t, lib)
	dir := filepath.Join(t.TempDir(), "pjrt")
	set := map[string]string{}
	plugins, err := Configure(Search{Dir: dir, Venvs: []string{t.TempDir(), venv}, Getenv: envOf(nil)},
		func(k, v string) error { set[k] = v; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(plugins) != 1 || plugins[0].Name != "cpu" {
		t.Fatalf("plugins %v", plugins)
	}
	link := filepath.Join(dir, "pjrt_c_api_cpu_plugin.so")
	if target, err := os.Readlink(link); err != nil || target != lib {
		t.Fatalf("link %s -> %q (%v), want %s", link, target, err, lib)
	}
	if set[EnvLibraryPath] != dir || set[EnvNoAutoInstall] != "1" {
		t.Fatalf("environment set: %v", set)
	}

	// Found again through the link, with the virtualenv gone too.
	os.RemoveAll(venv)
	if _, ps, _ := Find(Search{Dir: dir, Getenv: envOf(nil)}); len(ps) != 0 {
		t.Fatalf("a dangling link counts as a plugin: %v", ps)
	}
}

// The user's PJRT_PLUGIN_LIBRARY_PATH wins and nothing is linked.
func TestConfigureKeepsTheUsersPath(t *testing.T) {
	user := t.TempDir()
	writeFile(t, filepath.Join(user, "pjrt_c_api_cuda_plugin.so"))
	dir := filepath.Join(t.TempDir(), "pjrt")
	set := map[string]string{}
	plugins, err := Configure(Search{Dir: dir, Getenv: envOf(map[string]string{EnvLibraryPath: user})},
		func(k, v string) error { set[k] = v; return nil })
	if err != nil || len(plugins) != 1 || plugins[0].Name != "cuda" {
		t.Fatalf("plugins %v, %v", plugins, err)
	}
	if _, touched := set[EnvLibraryPath]; touched {
		t.Errorf("the user's %s was overwritten: %v", EnvLibraryPath, set)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("linked into %s although the user chose the path", dir)
	}
}

// Without any plugin the environment is left alone.
func TestConfigureWithoutPlugins(t *testing.T) {
	set := map[string]string{}
	plugins, err := Configure(Search{Dir: t.TempDir(), Venvs: []string{t.TempDir()}, Getenv: envOf(nil)},
		func(k, v string) error { set[k] = v; return nil })
	if err != nil || len(plugins) != 0 || len(set) != 0 {
		t.Fatalf("plugins %v, err %v, environment set %v", plugins, err, set)
	}
}

// JAX's CUDA plugin finds NVIDIA's libraries by $ORIGIN/../nvidia, from
// the link's directory: the link's parent gets an nvidia link to the
// virtualenv's site-packages/nvidia.
func TestCUDAPluginFindsNVIDIALibraries(t *testing.T) {
	venv := t.TempDir()
	site := filepath.Join(venv, "lib", "python3.11", "site-packages")
	writeFile(t, filepath.Join(site, "jax_plugins", "xla_cuda12", "xla_cuda_plugin.so"))
	writeFile(t, filepath.Join(site, "nvidia", "cublas", "lib", "libcublas.so.12"))
	cache := t.TempDir()
	dir := filepath.Join(cache, "pjrt")
	plugins, err := Configure(Search{Dir: dir, Venvs: []string{venv}, Getenv: envOf(nil)}, func(string, string) error { return nil })
	if err != nil || len(plugins) != 1 || plugins[0].Name != "cuda" {
		t.Fatalf("plugins %v, %v", plugins, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "..", "nvidia", "cublas", "lib", "libcublas.so.12")); err != nil {
		t.Fatalf("NVIDIA's libraries are not at $ORIGIN/../nvidia of the plugin's link: %v", err)
	}
	// Again: nothing to do, no error.
	if _, err := Configure(Search{Dir: dir, Venvs: []string{venv}, Getenv: envOf(nil)}, func(string, string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	// A directory of the user's own is left alone.
	cache2 := t.TempDir()
	if err := os.MkdirAll(filepath.Join(cache2, "nvidia"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Configure(Search{Dir: filepath.Join(cache2, "pjrt"), Venvs: []string{venv}, Getenv: envOf(nil)}, func(string, string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(cache2, "nvidia")); err != nil || fi.Mode()&os.ModeSymlink != 0 {
		t.Errorf("the user's nvidia directory was replaced: %v %v", fi, err)
	}
}

// A CUDA plugin linked before NVIDIA's libraries were (an older goaccel)
// gets them on the next start.
func TestCUDAPluginLinkedBefore(t *testing.T) {
	venv := t.TempDir()
	site := filepath.Join(venv, "lib", "python3.11", "site-packages")
	plugin := filepath.Join(site, "jax_plugins", "xla_cuda12", "xla_cuda_plugin.so")
	writeFile(t, plugin)
	writeFile(t, filepath.Join(site, "nvidia", "cudnn", "lib", "libcudnn.so.9"))
	dir := filepath.Join(t.TempDir(), "pjrt")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(plugin, filepath.Join(dir, FileName("cuda"))); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Find(Search{Dir: dir, Getenv: envOf(nil)}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "..", "nvidia", "cudnn", "lib", "libcudnn.so.9")); err != nil {
		t.Fatalf("NVIDIA's libraries not linked for an existing plugin link: %v", err)
	}
}
