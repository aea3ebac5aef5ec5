package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestKernelRejectsBadConnectionFiles(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"shell_port": 1,`), 0o644); err != nil {
		t.Fatal(err)
	}
	noKey := filepath.Join(dir, "nokey.json")
	if err := os.WriteFile(noKey, []byte(`{"transport":"tcp","ip":"127.0.0.1","shell_port":"x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"kernel"}, "missing -f CONNECTION_FILE"},
		{[]string{"kernel", "-f", filepath.Join(dir, "missing.json")}, "missing.json"},
		{[]string{"kernel", "-f", bad}, "bad.json"},
		{[]string{"kernel", "-f", noKey}, "shell_port"},
		{[]string{"kernel", "-f", bad, "--log-level", "loud"}, "--log-level"},
	} {
		code, _, stderr := runCmd(t, tc.args...)
		if code == 0 {
			t.Errorf("%v: exit 0", tc.args)
		}
		if !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: stderr %q lacks %q", tc.args, stderr, tc.want)
		}
		if n := strings.Count(strings.TrimSpace(stderr), "\n"); n != 0 {
			t.Errorf("%v: error is %d lines, want one: %q", tc.args, n+1, stderr)
		}
	}
}

func TestInstallUninstallVersion(t *testing.T) {
	prefix := t.TempDir()
	code, out, stderr := runCmd(t, "install", "--prefix", prefix, "--name", "go-cmd-test", "--display-name", "Go cmd test", "--env", "A=1", "--no-prebuild")
	if code != 0 {
		t.Fatalf("install: %d %s", code, stderr)
	}
	dir := filepath.Join(prefix, "share", "jupyter", "kernels", "go-cmd-test")
	if !strings.Contains(out, dir) {
		t.Fatalf("install output %q does not name %s", out, dir)
	}
	var spec struct {
		Argv        []string          `json:"argv"`
		DisplayName string            `json:"display_name"`
		Env         map[string]string `json:"env"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "kernel.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(spec.Argv[0]) || spec.Argv[1] != "kernel" || spec.DisplayName != "Go cmd test" || spec.Env["A"] != "1" {
		t.Fatalf("spec = %+v", spec)
	}
	if code, _, stderr := runCmd(t, "install", "--user", "--prefix", prefix); code == 0 || !strings.Contains(stderr, "choose one") {
		t.Fatalf("conflicting scopes: %d %q", code, stderr)
	}
	if code, _, stderr := runCmd(t, "uninstall", "--prefix", prefix, "--name", "go-cmd-test"); code != 0 {
		t.Fatalf("uninstall: %s", stderr)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatal("kernelspec still installed")
	}
	if code, out, _ := runCmd(t, "version"); code != 0 || !strings.HasPrefix(out, "goaccel ") {
		t.Fatalf("version: %d %q", code, out)
	}
	if code, _, stderr := runCmd(t, "frobnicate"); code != 2 || !strings.Contains(stderr, "unknown command") {
		t.Fatalf("unknown command: %d %q", code, stderr)
	}
}

func TestNodeRejectsBadOptions(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"node"}, "needs the rendezvous endpoint (--rdzv-endpoint)"},
		{[]string{"node", "--rdzv-endpoint", "127.0.0.1:1", "--rdzv-conf", "lease_ttl"}, "--rdzv-conf lease_ttl: want KEY=VALUE"},
		{[]string{"node", "--rdzv-endpoint", "127.0.0.1:1", "--node-rank", "0"}, "node rank 0 is the notebook's"},
		{[]string{"node", "--rdzv-endpoint", "127.0.0.1:1", "--rdzv-backend", "static", "--node-rank", "1"}, `needs a secret shared by every node (RdzvConf "secret_file"`},
		{[]string{"node", "--rdzv-endpoint", "127.0.0.1:1", "--rdzv-backend", "raft"}, "choose between 'static', 'c10d' and 'etcd'"},
		{[]string{"node", "--rdzv-endpoint", "127.0.0.1:1", "extra"}, `unexpected argument "extra"`},
	} {
		code, _, stderr := runCmd(t, tc.args...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q lacks %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestPrebuild builds a package for compiled cells ahead of them and says
// so; a package that does not exist is named in the error.
func TestPrebuild(t *testing.T) {
	code, out, stderr := runCmd(t, "prebuild", "strings")
	if code != 0 {
		t.Fatalf("prebuild strings: exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "[1/1] strings") || !strings.Contains(out, "built 1 packages for compiled cells") {
		if !strings.Contains(out, "skipped: compiled cells are unavailable") {
			t.Fatalf("prebuild output %q", out)
		}
	}
	code, _, stderr = runCmd(t, "prebuild", "--quiet", "example.invalid/nope")
	if code == 0 || !strings.Contains(stderr, "prebuilding example.invalid/nope") {
		t.Fatalf("prebuild of a missing package: exit %d, stderr %q", code, stderr)
	}
}
