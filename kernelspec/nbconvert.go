package kernelspec

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The nbconvert exporter (nbconvert/goaccel_nbconvert.py): JupyterLab's
// "Save and Export Notebook As" lists every exporter registered under the
// nbconvert.exporters entry point, so the exporter is a Python module and
// a distribution's metadata naming it, put in the site-packages of the
// Python environment of the install's scope. The kernel does not name it
// in its language_info (nbconvert_exporter): a notebook saved with that
// name would fail `--to script` wherever the exporter is not installed.

//go:embed nbconvert/goaccel_nbconvert.py
var exporterSource string

const (
	exporterModule   = "goaccel_nbconvert.py"
	exporterDistInfo = "goaccel_nbconvert-1.0.dist-info"
)

// InstallExporter installs goaccel's nbconvert exporter ("goaccel") for
// o's scope, calling o.Executable, and returns the site-packages directory
// it went to.
func InstallExporter(o Options) (string, error) {
	dir, err := sitePackages(o)
	if err != nil {
		return "", err
	}
	dist := filepath.Join(dir, exporterDistInfo)
	if err := os.MkdirAll(dist, 0o755); err != nil {
		return "", fmt.Errorf("the nbconvert exporter: %w", err)
	}
	files := map[string]string{
		filepath.Join(dir, exporterModule):      strings.Replace(exporterSource, "@GOACCEL@", o.Executable, 1),
		filepath.Join(dist, "METADATA"):         "Metadata-Version: 2.1\nName: goaccel-nbconvert\nVersion: 1.0\nSummary: goaccel's nbconvert exporter (written by goaccel install)\n",
		filepath.Join(dist, "entry_points.txt"): "[nbconvert.exporters]\ngoaccel = goaccel_nbconvert:GoProgramExporter\n",
		filepath.Join(dist, "RECORD"):           exporterModule + ",,\n" + exporterDistInfo + "/METADATA,,\n" + exporterDistInfo + "/entry_points.txt,,\n" + exporterDistInfo + "/RECORD,,\n",
	}
	for path, text := range files {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			return "", fmt.Errorf("the nbconvert exporter: %w", err)
		}
	}
	return dir, nil
}

// UninstallExporter removes the exporter from o's scope, if it is there.
func UninstallExporter(o Options) (string, error) {
	dir, err := sitePackages(o)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(dir, exporterModule)); errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err := os.Remove(filepath.Join(dir, exporterModule)); err != nil {
		return "", err
	}
	return dir, os.RemoveAll(filepath.Join(dir, exporterDistInfo))
}

// sitePackages is where the scope's Python environment imports pure
// modules from, as its python reports it.
func sitePackages(o Options) (string, error) {
	python, base := "python3", ""
	switch o.Scope {
	case User:
		out, err := exec.Command(python, "-c", "import site; print(site.getusersitepackages())").Output()
		if err != nil {
			return "", fmt.Errorf("the user's site-packages (python3 -m site): %w", err)
		}
		return strings.TrimSpace(string(out)), nil
	case SysPrefix:
		p, err := sysPrefix()
		if err != nil {
			return "", err
		}
		base = p
		if _, err := os.Stat(filepath.Join(p, "bin", "python3")); err == nil {
			python = filepath.Join(p, "bin", "python3")
		}
	case Prefix:
		if o.Prefix == "" {
			return "", errors.New("--prefix needs a directory")
		}
		base = o.Prefix
	}
	out, err := exec.Command(python, "-c", "import sys, sysconfig; print(sysconfig.get_path('purelib', vars={'base': sys.argv[1], 'platbase': sys.argv[1]}))", base).Output()
	if err != nil {
		return "", fmt.Errorf("the site-packages of %s (%s): %w", base, python, err)
	}
	return strings.TrimSpace(string(out)), nil
}
