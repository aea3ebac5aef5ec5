// Package pyvenv locates the Python virtual environment the tracker tests use
// to read our files back with each tracker's own tools (tensorboard, tbparse,
// dvc, dvclive, mlflow). It is for tests only.
package pyvenv

import (
	"bytes"
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
