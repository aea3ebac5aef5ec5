package build

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A launched worker that adopts the kernel's State compiles the module
// cache's packages as the kernel did, with the same interrupt checks: a
// package the worker compiles itself (twice) links against the kernel's
// archive of the package it imports (spin). Without the kernel's overlay
// the worker compiled its own spin, without checks, and the link failed
// with a fingerprint mismatch.
func TestAdoptedStateKeepsTheKernelsInterruptChecks(t *testing.T) {
	hermetic(t)
	ctx := context.Background()
	kernel := newBuilder(t)
	if err := kernel.Resolve(ctx, nil, "example.com/gxfix/spin"); err != nil {
		t.Fatal(err)
	}
	st := kernel.State()
	if !slices.ContainsFunc(st.Safepoints, func(p SafepointPackage) bool {
		return p.ImportPath == "example.com/gxfix/spin" && p.Version == "v1.0.0" && p.Rel == "" && slices.Equal(p.GoFiles, []string{"spin.go"})
	}) {
		t.Fatalf("State's packages with interrupt checks: %+v", st.Safepoints)
	}
	mod, _ := kernel.GoMod()
	if !strings.Contains(mod, "example.com/gxfix/spin v1.0.0 => ") {
		t.Fatalf("the kernel's go.mod does not link spin:\n%s", mod)
	}
	// A program made of the cells uses the module as published.
	if prog, err := kernel.ProgramGoMod(); err != nil || strings.Contains(prog, linkDirName) || !strings.Contains(prog, "example.com/gxfix/spin v1.0.0") {
		t.Fatalf("the program's go.mod (%v):\n%s", err, prog)
	}
	spinArchive := kernel.Archives()["example.com/gxfix/spin"]

	worker := newBuilder(t)
	if err := worker.AdoptState(ctx, st); err != nil {
		t.Fatal(err)
	}
	cell := withSymbols("goaccel.cells/test/twice", []string{"strconv", "example.com/gxfix/spin", "example.com/gxfix/spin/twice"}, "",
		`map[string]any{"f": func() string { var n int64; twice.Held(&n, 3); spin.Held(&n, 1); return strconv.FormatInt(n, 10) }}`)
	built, err := worker.Build(ctx, cell, nil)
	if err != nil {
		t.Fatalf("a cell of the worker that imports a package the kernel did not: %v", err)
	}
	if got := call(t, built); got != "7" {
		t.Fatalf("the cell returned %q, want 7", got)
	}
	if a := worker.Archives()["example.com/gxfix/spin"]; a != spinArchive {
		t.Errorf("the worker's spin is %s, the kernel's %s", a, spinArchive)
	}

	// Another machine: the kernel's links are not there. The worker links
	// the module itself and compiles it with the same checks.
	elsewhere := "/elsewhere/.cache/goaccel/build/0/safepoints/" + linkDirName + "/0123456789ab"
	foreign := strings.ReplaceAll(st.GoMod, kernel.modSP.linkRoot(kernel.modSP.modcache), elsewhere)
	if foreign == st.GoMod {
		t.Fatalf("the kernel's go.mod names no link under %s:\n%s", kernel.modSP.linkRoot(kernel.modSP.modcache), st.GoMod)
	}
	other := newBuilder(t)
	st2 := st
	st2.GoMod, st2.Archives = foreign, nil
	if err := other.AdoptState(ctx, st2); err != nil {
		t.Fatalf("adopting a State from a machine with other links: %v", err)
	}
	mod, _ = other.GoMod()
	if strings.Contains(mod, elsewhere) || !strings.Contains(mod, "example.com/gxfix/spin v1.0.0 => "+other.modSP.linkRoot(other.modSP.modcache)) {
		t.Fatalf("the adopting worker's go.mod:\n%s", mod)
	}
	if _, err := os.Stat(filepath.Join(other.modSP.linkRoot(other.modSP.modcache), "example.com", "gxfix", "spin@v1.0.0", "go.mod")); err != nil {
		t.Fatalf("the worker's link: %v", err)
	}
}

// checksFor tells apart listings compiled another way: a module compiled
// from its link or not, a file rewritten otherwise; files of packages
// outside the listing do not count.
func TestChecksForNamesHowPackagesCompile(t *testing.T) {
	pkg := func(dir string) *listed {
		return &listed{ImportPath: "example.com/m/p", Dir: dir, Module: &listedModule{Path: "example.com/m", Version: "v1.0.0"}}
	}
	s := &modSafepoints{redirected: map[string]string{"example.com/m@v1.0.0": "/links/example.com/m@v1.0.0"},
		replace: map[string]string{"/links/example.com/m@v1.0.0/p/a.go": "/overlay/1.go", "/elsewhere/b.go": "/overlay/2.go"}}
	pkgs := []*listed{pkg("/links/example.com/m@v1.0.0/p")}
	base := s.checksFor(pkgs)

	s.replace["/elsewhere/c.go"] = "/overlay/3.go"
	if got := s.checksFor(pkgs); got != base {
		t.Error("a file outside the listing's packages changed their name")
	}
	s.replace["/links/example.com/m@v1.0.0/p/a.go"] = "/overlay/4.go"
	if got := s.checksFor(pkgs); got == base {
		t.Error("a file rewritten otherwise kept the name")
	}
	s.replace["/links/example.com/m@v1.0.0/p/a.go"] = "/overlay/1.go"
	delete(s.redirected, "example.com/m@v1.0.0")
	if got := s.checksFor(pkgs); got == base {
		t.Error("a module no longer compiled from its link kept the name")
	}
}
