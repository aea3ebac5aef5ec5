package kernelspec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The exporter goes into the prefix's site-packages (as its python names
// them), calls the installing binary, and leaves with uninstall.
func TestExporterInstallsIntoThePrefixSitePackages(t *testing.T) {
	prefix := t.TempDir()
	o := Options{Scope: Prefix, Prefix: prefix, Executable: "/opt/goaccel/bin/goaccel"}
	dir, err := InstallExporter(o)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(dir, prefix) || !strings.Contains(dir, "site-packages") {
		t.Fatalf("installed in %s", dir)
	}
	mod, err := os.ReadFile(filepath.Join(dir, exporterModule))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mod), `GOACCEL = "/opt/goaccel/bin/goaccel"`) {
		t.Errorf("the module does not call the installing binary:\n%s", mod)
	}
	eps, err := os.ReadFile(filepath.Join(dir, exporterDistInfo, "entry_points.txt"))
	if err != nil || !strings.Contains(string(eps), "[nbconvert.exporters]\ngoaccel = goaccel_nbconvert:GoProgramExporter") {
		t.Errorf("entry points: %q, %v", eps, err)
	}
	if got, err := UninstallExporter(o); err != nil || got != dir {
		t.Fatalf("UninstallExporter = %q, %v", got, err)
	}
	for _, p := range []string{exporterModule, exporterDistInfo} {
		if _, err := os.Stat(filepath.Join(dir, p)); !os.IsNotExist(err) {
			t.Errorf("%s left after uninstall (%v)", p, err)
		}
	}
}
