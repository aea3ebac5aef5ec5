package fidelity_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/goaccel/goaccel/fidelity"
	"github.com/goaccel/goaccel/fidelity/corpus"
	"github.com/goaccel/goaccel/fidelity/report"
)

// TestHarnessEndToEnd runs the instrument on a handful of programs through
// the real engine: one from each suite, and two programs that crash and hang
// the child, to prove deaths and hangs are caught without stopping the run.
// It checks that the harness works, not how well the engine does.
func TestHarnessEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds runcell and runs programs")
	}
	// Hang guards only: a cold machine builds the standard library for
	// plugins on the first cell (tens of seconds on a busy two-core one).
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	moduleRoot, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	runcell, err := fidelity.BuildRuncell(ctx, "go", moduleRoot, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}

	// One program from each suite.
	r, err := fidelity.Run(ctx, fidelity.Options{
		Runcell:     runcell,
		ExamplesDir: filepath.Join("testdata", "examples"),
		Globs:       []string{"test/helloworld.go", "typeparam/sum.go", "fixedbugs/bug000.go", "examples/hello.go"},
		Timeout:     5 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	var suites []string
	for _, p := range r.Programs {
		suites = append(suites, p.Suite)
		if p.GoRun == nil || p.GoRun.ExitCode != 0 || p.Cell == nil || !p.Cell.Replied {
			t.Errorf("%s did not run both ways: %+v", p.Name, p)
		}
		if !slices.Contains([]report.Category{report.Pass, report.Error, report.WrongOutput}, p.Category) {
			t.Errorf("%s: category %s (%s)", p.Name, p.Category, p.Detail)
		}
	}
	if !slices.Equal(suites, corpus.Suites) {
		t.Errorf("ran suites %q, want one program of each of %q", suites, corpus.Suites)
	}
	if p := r.Programs[0]; p.GoRun.Output != "hello, world\n" {
		t.Errorf("go run of helloworld.go printed %q", p.GoRun.Output)
	}

	// A program that kills the child and one that never ends. The timeout
	// is what the hang costs the test; it is far above what building and
	// running crash.go needs once the runs above warmed the build cache.
	r, err = fidelity.Run(ctx, fidelity.Options{
		Runcell:     runcell,
		ExamplesDir: filepath.Join("testdata", "harness"),
		Suites:      []string{corpus.SuiteExamples},
		Timeout:     30 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]report.Program{}
	for _, p := range r.Programs {
		got[filepath.Base(p.Name)] = p
	}
	// The cell's line may or may not leave the killed kernel before it dies
	// (its output is relayed through a pipe); what it did print is kept.
	if p := got["crash.go"]; p.Category != report.Death || (p.Cell.Output != "about to crash\n" && p.Cell.Output != "") || p.GoRun.Status != "signal: killed" {
		t.Errorf("crash.go: %s (%s), cell output %q, go run %q", p.Category, p.Detail, p.Cell.Output, p.GoRun.Status)
	}
	if p := got["hang.go"]; p.Category != report.Hang || p.GoRun.ExitCode != 2 {
		t.Errorf("hang.go: %s (%s), go run %s", p.Category, p.Detail, p.GoRun.Status)
	}

	// The same two in ONE session: the crash costs its program and the
	// session starts again for the next; the hang is interrupted by the
	// child at the timeout.
	rs, err := fidelity.Run(ctx, fidelity.Options{
		Runcell:     runcell,
		ExamplesDir: filepath.Join("testdata", "harness"),
		Suites:      []string{corpus.SuiteExamples},
		Timeout:     30 * time.Second,
		Session:     true,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rs.Programs {
		want := map[string]report.Category{"crash.go": report.Death, "hang.go": report.Hang}[filepath.Base(p.Name)]
		if p.Category != want {
			t.Errorf("one session: %s: %s (%s), want %s", p.Name, p.Category, p.Detail, want)
		}
	}
	if rs.Restarts != 1 {
		t.Errorf("one session: %d restarts, want 1 (after crash.go)", rs.Restarts)
	}

	// The report round-trips and compares with itself as unchanged.
	path := filepath.Join(t.TempDir(), "r.json")
	if err := report.Write(path, r); err != nil {
		t.Fatal(err)
	}
	back, err := report.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if changes := report.Compare(r, back); len(changes) != 0 {
		t.Errorf("a report differs from itself read back: %v", changes)
	}
	if _, err := os.Stat(runcell); err != nil {
		t.Error(err)
	}
}
