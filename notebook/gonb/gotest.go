package gonb

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Tests are the test and benchmark functions %test runs, by name.
type Tests struct {
	Tests      map[string]func(*testing.T)
	Benchmarks map[string]func(*testing.B)
	// Pkg is the import path the benchmarks' header names (pkg:), as
	// go test names the package it tests.
	Pkg string
}

// TestArgs are the flags GoNB's %test gives the test binary when the cell
// gives none: -test.v, the cell's own tests (all tests when the cell
// defines none), and -test.bench for the cell's benchmarks.
func TestArgs(cellTests, cellBenchmarks []string) []string {
	args := []string{"-test.v"}
	switch {
	case len(cellTests) > 0:
		args = append(args, "-test.run=^("+strings.Join(cellTests, "|")+")$")
	case len(cellBenchmarks) > 0:
		args = append(args, "-test.run=^$")
	}
	if len(cellBenchmarks) > 0 {
		args = append(args, "-test.bench=^("+strings.Join(cellBenchmarks, "|")+")$")
	}
	return args
}

var testMu sync.Mutex

// RunTests runs tests as `go test` runs a package's, in this process, with
// args as the test binary's flags (-test.v, -test.run, -test.bench, ...).
// Output goes to os.Stdout. It returns the exit code a test binary would
// (0: PASS). A panicking test fails (the kernel survives it).
func RunTests(ts Tests, args []string) (int, error) {
	testMu.Lock()
	defer testMu.Unlock()
	var tests []testing.InternalTest
	for name, f := range ts.Tests {
		tests = append(tests, testing.InternalTest{Name: name, F: guardTest(f)})
	}
	sort.Slice(tests, func(i, j int) bool { return tests[i].Name < tests[j].Name })
	var benchmarks []testing.InternalBenchmark
	for name, f := range ts.Benchmarks {
		benchmarks = append(benchmarks, testing.InternalBenchmark{Name: name, F: guardBenchmark(f)})
	}
	sort.Slice(benchmarks, func(i, j int) bool { return benchmarks[i].Name < benchmarks[j].Name })

	// MainStart registers the test.* flags (once, on flag.CommandLine);
	// they are parsed here from args, from their defaults.
	m := testing.MainStart(testDeps{pkg: ts.Pkg}, tests, benchmarks, nil, nil)
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	flag.CommandLine.VisitAll(func(f *flag.Flag) {
		if strings.HasPrefix(f.Name, "test.") {
			_ = f.Value.Set(f.DefValue)
			fs.Var(f.Value, f.Name, f.Usage)
		}
	})
	if err := fs.Parse(args); err != nil {
		return 2, fmt.Errorf("%%test %s: %v (test flags are -test.v, -test.run=REGEXP, -test.bench=REGEXP, ...)", strings.Join(args, " "), err)
	}
	if !flag.Parsed() {
		_ = flag.CommandLine.Parse(nil)
	}
	return m.Run(), nil
}

// guardTest turns a panic of a test into its failure: the testing
// package would end the process.
func guardTest(f func(*testing.T)) func(*testing.T) {
	return func(t *testing.T) {
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("panic: %v\n%s", r, debug.Stack())
			}
		}()
		f(t)
	}
}

func guardBenchmark(f func(*testing.B)) func(*testing.B) {
	return func(b *testing.B) {
		defer func() {
			if r := recover(); r != nil {
				b.Errorf("panic: %v\n%s", r, debug.Stack())
			}
		}()
		f(b)
	}
}

// corpusEntry is the testing package's type of fuzzing inputs.
type corpusEntry = struct {
	Parent     string
	Path       string
	Data       []byte
	Values     []any
	Generation int
	IsSeed     bool
}

var errNoFuzz = errors.New("fuzzing is not supported in notebooks: run go test -fuzz on a package")

// testDeps is what the testing package needs from the test binary
// (testing/internal/testdeps in a binary go test builds).
type testDeps struct{ pkg string }

var matchCache sync.Map

func (testDeps) MatchString(pat, str string) (bool, error) {
	if re, ok := matchCache.Load(pat); ok {
		return re.(*regexp.Regexp).MatchString(str), nil
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		return false, err
	}
	matchCache.Store(pat, re)
	return re.MatchString(str), nil
}
func (d testDeps) ImportPath() string                    { return d.pkg }
func (testDeps) ModulePath() string                      { return "" }
func (testDeps) SetPanicOnExit0(bool)                    {}
func (testDeps) StartCPUProfile(w io.Writer) error       { return pprof.StartCPUProfile(w) }
func (testDeps) StopCPUProfile()                         { pprof.StopCPUProfile() }
func (testDeps) StartTestLog(io.Writer)                  {}
func (testDeps) StopTestLog() error                      { return nil }
func (testDeps) CheckCorpus([]any, []reflect.Type) error { return nil }
func (testDeps) ResetCoverage()                          {}
func (testDeps) SnapshotCoverage()                       {}
func (testDeps) WriteProfileTo(name string, w io.Writer, debug int) error {
	p := pprof.Lookup(name)
	if p == nil {
		return fmt.Errorf("unknown profile %q", name)
	}
	return p.WriteTo(w, debug)
}
func (testDeps) CoordinateFuzzing(time.Duration, int64, time.Duration, int64, int, []corpusEntry, []reflect.Type, string, string) error {
	return errNoFuzz
}
func (testDeps) RunFuzzWorker(func(corpusEntry) error) error { return errNoFuzz }
func (testDeps) ReadCorpus(string, []reflect.Type) ([]corpusEntry, error) {
	return nil, nil
}
func (testDeps) InitRuntimeCoverage() (string, func(string, string) (string, error), func() float64) {
	return "", nil, nil
}
