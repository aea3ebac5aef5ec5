package wandb

import (
	"os"
	"path/filepath"
	"testing"
)

// venvBin returns a program from the test virtual environment (GOACCEL_VENV,
// default ~/.cache/goaccel/venv). A missing environment fails the test: the
// read-back by wandb's own tools is the point of these tests.
func venvBin(t *testing.T, name string) string {
	t.Helper()
	venv := os.Getenv("GOACCEL_VENV")
	if venv == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatalf("no home directory to find the venv: %v; run make test-deps", err)
		}
		venv = filepath.Join(home, ".cache", "goaccel", "venv")
	}
	p := filepath.Join(venv, "bin", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s not found in the test venv (%v): run make test-deps", name, err)
	}
	return p
}

// offlineEnv keeps wandb's tools off the network.
func offlineEnv(home string) []string {
	return append(os.Environ(),
		"WANDB_MODE=offline", "WANDB_SILENT=true", "WANDB_DISABLE_GIT=true",
		"WANDB_DISABLE_CODE=true", "WANDB_ERROR_REPORTING=false",
		"WANDB_CONFIG_DIR="+filepath.Join(home, "config"),
		"WANDB_CACHE_DIR="+filepath.Join(home, "cache"),
		"WANDB_DATA_DIR="+filepath.Join(home, "data"),
	)
}
