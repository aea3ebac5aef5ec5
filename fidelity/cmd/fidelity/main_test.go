package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/fidelity/report"
)

func writeReport(t *testing.T, name string, cats ...report.Category) string {
	t.Helper()
	r := &report.Report{FormatVersion: report.FormatVersion, Started: time.Now(), Timeout: "30s", Parallel: 2,
		Suites: []string{"test", "fixedbugs", "examples"}}
	names := []string{"test/a.go", "fixedbugs/b.go", "examples/c.go"}
	for i, c := range cats {
		suite, _, _ := strings.Cut(names[i], "/")
		r.Programs = append(r.Programs, report.Program{Suite: suite, Name: names[i], Category: c, Detail: "why " + string(c),
			GoRun: &report.GoRun{Output: "x\n"}, Cell: &report.Cell{Output: "y\n", Replied: true}})
	}
	path := filepath.Join(t.TempDir(), name)
	if err := report.Write(path, r); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCompareMode(t *testing.T) {
	old := writeReport(t, "old.json", report.Pass, report.Hang, report.WrongOutput)
	cur := writeReport(t, "new.json", report.Pass, report.Pass, report.Error)
	var out, errOut strings.Builder
	if err := run(context.Background(), []string{"-compare", old, cur}, &out, &errOut); err != nil {
		t.Fatal(err, errOut.String())
	}
	for _, want := range []string{
		"now passing (1):\n  fixedbugs/b.go: hang → pass\n",
		"other changes (1):\n  examples/c.go: wrong-output → error — why error\n",
		"go (test+fixedbugs)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if err := run(context.Background(), []string{"-compare", old}, &out, &errOut); err == nil {
		t.Error("-compare with one report was accepted")
	}
}

func TestReportMode(t *testing.T) {
	path := writeReport(t, "r.json", report.Pass, report.Death, report.WrongOutput)
	var out, errOut strings.Builder
	err := run(context.Background(), []string{"-report", path, "-suite", "go", "-list", "-diff"}, &out, &errOut)
	if err != nil {
		t.Fatal(err, errOut.String())
	}
	got := out.String()
	for _, want := range []string{
		"=== fixedbugs/b.go: death — why death",
		"  test                 1 passed, 0 failed",
		"  fixedbugs            0 passed, 1 failed (0.0% of 1): 1 death,",
		"  go (test+fixedbugs)  1 passed, 1 failed",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "examples") || strings.Contains(got, "  all ") {
		t.Errorf("-suite go shows examples or a total beside go's:\n%s", got)
	}
}
