package corpus

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func testConfig() Config {
	return Config{
		GOROOT:      filepath.Join("testdata", "goroot"),
		ExamplesDir: filepath.Join("testdata", "examples"),
		Tags:        NewTags("linux", "amd64", "unix", "gc", "cgo"),
	}
}

func names(ps []Program) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

func TestDiscoverSelectsRunPrograms(t *testing.T) {
	ps, err := Discover(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"test/plain.go", "test/plan9only.go",
		"typeparam/unixonly.go",
		"fixedbugs/issue1.go",
		"examples/embedded.go", "examples/plain.go", "examples/random.go",
	}
	if got := names(ps); !slices.Equal(got, want) {
		t.Fatalf("programs = %q, want %q", got, want)
	}
	byName := map[string]Program{}
	for _, p := range ps {
		byName[p.Name] = p
		if !filepath.IsAbs(p.Path) {
			t.Errorf("%s: path %q is not absolute", p.Name, p.Path)
		}
	}
	if p := byName["test/plan9only.go"]; p.Applicable || !strings.Contains(p.Reason, "plan9") || !strings.Contains(p.Reason, "linux/amd64+cgo") {
		t.Errorf("plan9only: applicable %v, reason %q", p.Applicable, p.Reason)
	}
	if p := byName["typeparam/unixonly.go"]; !p.Applicable {
		t.Errorf("unixonly: not applicable: %s", p.Reason)
	}
	if p := byName["examples/random.go"]; !p.Nondeterministic {
		t.Error("random.go is not marked nondeterministic")
	}
	if p := byName["fixedbugs/issue1.go"]; !filepath.IsAbs(p.WorkDir) || filepath.Base(p.WorkDir) != "test" {
		t.Errorf("issue1.go runs in %q, want GOROOT/test", p.WorkDir)
	}
	if p := byName["examples/plain.go"]; p.Nondeterministic || p.FilesDir != "" || p.WorkDir != "" {
		t.Errorf("plain.go: nondeterministic %v, files %q", p.Nondeterministic, p.FilesDir)
	}
	if p := byName["examples/embedded.go"]; filepath.Base(p.FilesDir) != "embedded.files" {
		t.Errorf("embedded.go: files dir %q", p.FilesDir)
	}
}

func TestDiscoverFilters(t *testing.T) {
	cfg := testConfig()
	cfg.Suites = []string{SuiteExamples, SuiteFixedbugs}
	cfg.Globs = []string{"fixedbugs/issue*.go", "r*.go"}
	ps, err := Discover(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"fixedbugs/issue1.go", "examples/random.go"}
	if got := names(ps); !slices.Equal(got, want) {
		t.Fatalf("programs = %q, want %q", got, want)
	}

	cfg.Suites = []string{"nosuch"}
	if _, err := Discover(cfg); err == nil {
		t.Error("an unknown suite was accepted")
	}
	cfg.Suites, cfg.Globs = nil, []string{"["}
	if _, err := Discover(cfg); err == nil {
		t.Error("a bad glob was accepted")
	}
}

func TestParseHeader(t *testing.T) {
	tests := []struct {
		src, action                string
		nondet, hasConstraint, bad bool
	}{
		{src: "// run\n\npackage main\n", action: "// run"},
		{src: "// run   \npackage main\n", action: "// run"},
		{src: "//go:build linux\n\n// run\npackage main\n", action: "// run", hasConstraint: true},
		{src: "// Doc.\n// fidelity: nondeterministic\npackage main\n", action: "// Doc.", nondet: true},
		{src: "package main\n// run\n", action: ""},
		{src: "//go:build a\n//go:build b\n// run\npackage main\n", action: "// run", bad: true},
		{src: "//go:build (a\n// run\npackage main\n", action: "// run", bad: true},
	}
	for _, tt := range tests {
		h := parseHeader([]byte(tt.src))
		if h.action != tt.action || h.nondeterministic != tt.nondet || (h.constraint != nil) != tt.hasConstraint || (h.err != nil) != tt.bad {
			t.Errorf("parseHeader(%q) = action %q, nondet %v, constraint %v, err %v", tt.src, h.action, h.nondeterministic, h.constraint, h.err)
		}
	}
}

func TestDefaultTags(t *testing.T) {
	tags := DefaultTags(true)
	for _, tag := range []string{tags.GOOS, tags.GOARCH, "gc", "cgo", "go1.1", "go1.21"} {
		if !tags.Has(tag) {
			t.Errorf("tag %q does not hold", tag)
		}
	}
	if tags.Has("gccgo") || DefaultTags(false).Has("cgo") {
		t.Error("gccgo holds, or cgo holds without cgo")
	}
}
