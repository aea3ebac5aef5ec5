// Package pyvenv locates the Python virtual environment the tracker tests use
// to read our files back with each tracker's own tools (tensorboard, tbparse,
// dvc, dvclive, mlflow, aim, clearml, comet_ml, wandb). It is for tests only.
package pyvenv

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Dir returns the venv directory: $GOACCEL_VENV, else ~/.cache/goaccel/venv.
func Dir() string {
	if d := os.Getenv("GOACCEL_VENV"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(".cache", "goaccel", "venv")
	}
	return filepath.Join(home, ".cache", "goaccel", "venv")
}

// Bin returns the path of a program in the venv's bin directory, failing the
// test (never skipping it) when the venv or the program is missing.
func Bin(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(Dir(), "bin", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the Python test environment is missing (%s not found: %v): run `make test-deps` to create it (or set GOACCEL_VENV to a venv with tensorboard, tbparse, tensorboardX, mlflow, dvc and dvclive)", p, err)
	}
	return p
}

// Python returns the venv's python.
func Python(t testing.TB) string { return Bin(t, "python") }

// Run runs the venv's python with args (a script and its arguments) in dir
// and returns its stdout, failing the test with stderr when it fails.
func Run(t testing.TB, dir string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(Python(t), args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("python %v: %v\nstdout:\n%s\nstderr:\n%s", args, err, out.String(), errb.String())
	}
	return out.Bytes()
}

// Output runs the venv's program name (python, wandb, ...) with args in the
// current directory, with env added to the process's environment, and
// returns its stdout and stderr, failing the test with stderr when it fails.
func Output(t testing.TB, env []string, name string, args ...string) (stdout []byte, stderr string) {
	t.Helper()
	cmd := exec.Command(Bin(t, name), args...)
	cmd.Env = append(os.Environ(), env...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, errb.String())
	}
	return out, errb.String()
}

// ReadJSON runs the venv's python with args (a reader script and its
// arguments) and env added to the environment, decodes its stdout as JSON
// into v and returns its stderr; it fails the test when the script fails or
// prints something else.
func ReadJSON(t testing.TB, v any, env []string, args ...string) (stderr string) {
	t.Helper()
	out, stderr := Output(t, env, "python", args...)
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("reader output %q: %v", out, err)
	}
	return stderr
}
