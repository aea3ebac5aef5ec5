// Package corpus finds the programs the fidelity harness runs: Go's own
// `// run` test programs in the installed toolchain's GOROOT/test tree and
// the harness's own example programs. It decides which programs qualify,
// whether their //go:build constraints hold on this machine, and which are
// marked nondeterministic; it runs nothing.
package corpus

import (
	"bufio"
	"bytes"
	"fmt"
	"go/build/constraint"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// The suites, in the order they are reported.
const (
	SuiteTest      = "test"      // $GOROOT/test/*.go
	SuiteTypeparam = "typeparam" // $GOROOT/test/typeparam/*.go
	SuiteFixedbugs = "fixedbugs" // $GOROOT/test/fixedbugs/*.go
	SuiteExamples  = "examples"  // the harness's own Go by Example-style programs
)

// Suites lists every suite name in report order.
var Suites = []string{SuiteTest, SuiteTypeparam, SuiteFixedbugs, SuiteExamples}

// GoSuites are the suites taken from the toolchain's GOROOT/test tree.
var GoSuites = []string{SuiteTest, SuiteTypeparam, SuiteFixedbugs}

// NondeterministicMarker, as a line of an example's header comment, makes
// the harness check only that the program runs without error: its output
// depends on time, randomness or goroutine scheduling.
const NondeterministicMarker = "// fidelity: nondeterministic"

// FilesSuffix names an example's companion directory: the contents of
// "NAME.files/" beside "NAME.go" are copied into the program's working
// directory (and its build directory, for //go:embed).
const FilesSuffix = ".files"

// Program is one program to run.
type Program struct {
	Suite string // one of Suites
	// Name identifies the program in reports: "fixedbugs/issue56990.go",
	// "test/recover.go", "examples/closures.go".
	Name string
	Path string // absolute path of the source file
	// FilesDir is the example's companion directory ("" when none).
	FilesDir string
	// WorkDir is where the program must run: $GOROOT/test for Go's test
	// programs, as Go's harness runs them; "" for a fresh directory.
	WorkDir string
	// Nondeterministic programs are only checked to run without error.
	Nondeterministic bool
	// Applicable is false when the program's //go:build constraint does not
	// hold here; Reason then says which constraint.
	Applicable bool
	Reason     string
}

// Config says where the suites live and which programs to select.
type Config struct {
	GOROOT      string   // the installed toolchain's root (go env GOROOT)
	ExamplesDir string   // the harness's examples (fidelity/testdata/examples)
	Suites      []string // suites to include; empty means all
	// Globs select programs by Name ("fixedbugs/issue5*.go") or by base
	// name ("closures.go"); empty selects every program of the suites.
	Globs []string
	Tags  Tags // build tags that hold here
}

// Discover lists the selected programs, in suite order and then by name.
func Discover(cfg Config) ([]Program, error) {
	suites := cfg.Suites
	if len(suites) == 0 {
		suites = Suites
	}
	for _, s := range suites {
		if !slices.Contains(Suites, s) {
			return nil, fmt.Errorf("corpus: unknown suite %q (have %s)", s, strings.Join(Suites, ", "))
		}
	}
	for _, g := range cfg.Globs {
		if _, err := path.Match(g, ""); err != nil {
			return nil, fmt.Errorf("corpus: bad glob %q: %w", g, err)
		}
	}
	var out []Program
	for _, s := range Suites { // report order, whatever order was asked
		if !slices.Contains(suites, s) {
			continue
		}
		progs, err := suite(cfg, s)
		if err != nil {
			return nil, err
		}
		for _, p := range progs {
			if Selected(p.Name, cfg.Globs) {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// Selected reports whether a program's Name matches one of globs, whole or
// by its base name; every name matches no globs.
func Selected(name string, globs []string) bool {
	if len(globs) == 0 {
		return true
	}
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
		if ok, _ := path.Match(g, path.Base(name)); ok {
			return true
		}
	}
	return false
}

func suite(cfg Config, s string) ([]Program, error) {
	var dir string
	switch s {
	case SuiteTest:
		dir = filepath.Join(cfg.GOROOT, "test")
	case SuiteTypeparam, SuiteFixedbugs:
		dir = filepath.Join(cfg.GOROOT, "test", s)
	case SuiteExamples:
		dir = cfg.ExamplesDir
	}
	if dir == "" || (s != SuiteExamples && cfg.GOROOT == "") {
		return nil, fmt.Errorf("corpus: no directory for suite %q", s)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, fmt.Errorf("corpus: listing %s: %w", dir, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("corpus: suite %q: no .go files in %s", s, dir)
	}
	slices.Sort(files)
	var out []Program
	for _, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil {
			return nil, fmt.Errorf("corpus: %w", err)
		}
		src, err := os.ReadFile(abs)
		if err != nil {
			return nil, fmt.Errorf("corpus: %w", err)
		}
		h := parseHeader(src)
		if s != SuiteExamples && h.action != "// run" {
			continue
		}
		p := Program{Suite: s, Name: s + "/" + filepath.Base(f), Path: abs, Applicable: true}
		if s != SuiteExamples {
			if p.WorkDir, err = filepath.Abs(filepath.Join(cfg.GOROOT, "test")); err != nil {
				return nil, fmt.Errorf("corpus: %w", err)
			}
		} else {
			p.Nondeterministic = h.nondeterministic
			files := strings.TrimSuffix(abs, ".go") + FilesSuffix
			if st, err := os.Stat(files); err == nil && st.IsDir() {
				p.FilesDir = files
			}
		}
		if h.constraint != nil && !h.constraint.Eval(cfg.Tags.Has) {
			p.Applicable = false
			p.Reason = "//go:build " + h.constraint.String() + " does not hold on " + cfg.Tags.Platform()
		}
		if h.err != nil {
			p.Applicable = false
			p.Reason = h.err.Error()
		}
		out = append(out, p)
	}
	return out, nil
}

// header is what the comment lines before the package clause say.
type header struct {
	// action is the first comment line that is not a //go:build line,
	// trailing blanks removed ("// run", "// errorcheck", ...).
	action           string
	constraint       constraint.Expr
	nondeterministic bool
	err              error
}

func parseHeader(src []byte) header {
	var h header
	var builds []string
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
scan:
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \t\r")
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
		case strings.HasPrefix(trimmed, "//go:build"):
			builds = append(builds, trimmed)
		case strings.HasPrefix(trimmed, "//"):
			if h.action == "" {
				h.action = line
			}
			if trimmed == NondeterministicMarker {
				h.nondeterministic = true
			}
		default: // the package clause, a /* */ comment or code: the header is over
			break scan
		}
	}
	if len(builds) > 1 {
		h.err = fmt.Errorf("more than one //go:build line")
		return h
	}
	if len(builds) == 1 {
		c, err := parseConstraint(builds[0])
		if err != nil {
			h.err = err
			return h
		}
		h.constraint = c
	}
	return h
}
