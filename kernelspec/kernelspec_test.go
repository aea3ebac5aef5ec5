package kernelspec

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestInstallPrefixWritesSpecAndLogos(t *testing.T) {
	prefix := t.TempDir()
	dir, err := Install(Options{Scope: Prefix, Prefix: prefix, Executable: "/opt/goaccel/bin/goaccel",
		Env: map[string]string{"GOACCEL_LOG": "debug"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(prefix, "share", "jupyter", "kernels", "goaccel"); dir != want {
		t.Fatalf("dir = %s, want %s", dir, want)
	}
	files, err := Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"kernel.json", "logo-32x32.png", "logo-64x64.png", "logo-svg.svg"}
	if !reflect.DeepEqual(files, want) {
		t.Fatalf("files = %v, want %v", files, want)
	}
	var spec Spec
	b, _ := os.ReadFile(filepath.Join(dir, "kernel.json"))
	if err := json.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	if spec.Language != "go" || spec.InterruptMode != "message" || spec.DisplayName != DefaultDisplayName {
		t.Fatalf("spec = %+v", spec)
	}
	if !reflect.DeepEqual(spec.Argv, []string{"/opt/goaccel/bin/goaccel", "kernel", "-f", "{connection_file}"}) {
		t.Fatalf("argv = %v", spec.Argv)
	}
	if spec.Env["GOACCEL_LOG"] != "debug" {
		t.Fatalf("env = %v", spec.Env)
	}
	png, _ := os.ReadFile(filepath.Join(dir, "logo-64x64.png"))
	if !strings.HasPrefix(string(png), "\x89PNG") {
		t.Fatal("logo-64x64.png is not a PNG")
	}
}

func TestUserScopeHonoursJupyterDataDir(t *testing.T) {
	d := t.TempDir()
	t.Setenv("JUPYTER_DATA_DIR", d)
	dir, err := Install(Options{Scope: User, Name: "go-test", DisplayName: "Go test", Executable: "/bin/true"})
	if err != nil {
		t.Fatal(err)
	}
	if dir != filepath.Join(d, "kernels", "go-test") {
		t.Fatalf("dir = %s", dir)
	}
	removed, err := Uninstall(Options{Scope: User, Name: "go-test"})
	if err != nil || removed != dir {
		t.Fatalf("uninstall = %s, %v", removed, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("kernelspec still there: %v", err)
	}
	if _, err := Uninstall(Options{Scope: User, Name: "go-test"}); err == nil {
		t.Fatal("second uninstall succeeded")
	}
}

func TestSysPrefixUsesVirtualEnv(t *testing.T) {
	venv := t.TempDir()
	t.Setenv("VIRTUAL_ENV", venv)
	dir, err := KernelsDir(Options{Scope: SysPrefix})
	if err != nil {
		t.Fatal(err)
	}
	if dir != filepath.Join(venv, "share", "jupyter", "kernels") {
		t.Fatalf("dir = %s", dir)
	}
}

func TestBadInputs(t *testing.T) {
	if _, err := Install(Options{Scope: Prefix, Prefix: t.TempDir(), Executable: "goaccel"}); err == nil || !strings.Contains(err.Error(), "absolute") {
		t.Fatalf("relative executable: %v", err)
	}
	if _, err := Install(Options{Scope: Prefix, Prefix: t.TempDir(), Name: "bad name/x", Executable: "/bin/true"}); err == nil || !strings.Contains(err.Error(), "invalid") {
		t.Fatalf("bad name: %v", err)
	}
	if _, err := ParseEnv([]string{"NOEQUALS"}); err == nil || !strings.Contains(err.Error(), "KEY=VALUE") {
		t.Fatalf("bad env: %v", err)
	}
	env, err := ParseEnv([]string{"A=1", "B=x=y"})
	if err != nil || env["A"] != "1" || env["B"] != "x=y" {
		t.Fatalf("env = %v, %v", env, err)
	}
}

// TestJupyterFindsInstalledSpec asks the real `jupyter kernelspec list` (from
// the test virtualenv) whether it sees what Install wrote.
func TestJupyterFindsInstalledSpec(t *testing.T) {
	jupyter := filepath.Join(venvDir(t), "bin", "jupyter")
	prefix := t.TempDir()
	dir, err := Install(Options{Scope: Prefix, Prefix: prefix, Name: "goaccel-spec-test", Executable: "/bin/true"})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(jupyter, "kernelspec", "list", "--json")
	cmd.Env = append(os.Environ(), "JUPYTER_PATH="+filepath.Join(prefix, "share", "jupyter"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("jupyter kernelspec list: %v", err)
	}
	var listed struct {
		Kernelspecs map[string]struct {
			ResourceDir string `json:"resource_dir"`
			Spec        Spec   `json:"spec"`
		} `json:"kernelspecs"`
	}
	if err := json.Unmarshal(out, &listed); err != nil {
		t.Fatalf("parsing %s: %v", out, err)
	}
	ks, ok := listed.Kernelspecs["goaccel-spec-test"]
	if !ok {
		t.Fatalf("jupyter does not list the spec: %s", out)
	}
	if ks.ResourceDir != dir || ks.Spec.Language != "go" {
		t.Fatalf("listed %+v", ks)
	}
}

func venvDir(t *testing.T) string {
	t.Helper()
	v := os.Getenv("GOACCEL_VENV")
	if v == "" {
		home, _ := os.UserHomeDir()
		v = filepath.Join(home, ".cache", "goaccel", "venv")
	}
	if _, err := os.Stat(filepath.Join(v, "bin", "jupyter")); err != nil {
		t.Fatalf("test virtualenv missing at %s (run `make test-deps`): %v", v, err)
	}
	return v
}
