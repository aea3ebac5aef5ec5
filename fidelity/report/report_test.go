package report

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func sample() *Report {
	return &Report{
		FormatVersion: FormatVersion,
		Started:       time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC),
		Seconds:       75,
		GoVersion:     "go1.26.8",
		Platform:      "linux/amd64+cgo",
		Timeout:       "30s",
		Parallel:      2,
		Suites:        []string{"test", "examples"},
		Programs: []Program{
			{Suite: "test", Name: "test/a.go", Category: Pass},
			{Suite: "test", Name: "test/b.go", Category: Death, Detail: "the kernel was killed (signal: killed)"},
			{Suite: "test", Name: "test/c.go", Category: NotApplicable, Detail: "//go:build plan9 does not hold"},
			{Suite: "examples", Name: "examples/d.go", Category: WrongOutput,
				GoRun: &GoRun{Output: "x\ny\n", Status: "exit status 0"},
				Cell:  &Cell{Output: "x\nz\n", Replied: true}},
			{Suite: "examples", Name: "examples/e.go", Category: Hang},
		},
	}
}

func TestWriteRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "r.json")
	if err := Write(path, sample()); err != nil {
		t.Fatal(err)
	}
	r, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Programs) != 5 || r.Programs[3].Cell.Output != "x\nz\n" || !r.Started.Equal(sample().Started) {
		t.Errorf("read back %+v", r)
	}
}

func TestSummary(t *testing.T) {
	var b strings.Builder
	Summary(&b, sample(), []Group{{"test", []string{"test"}}, {"all", []string{"test", "examples"}}})
	got := b.String()
	for _, want := range []string{
		"go1.26.8 linux/amd64+cgo, 5 programs in 1m15s (timeout 30s, 2 in parallel)",
		"  test  1 passed, 1 failed (50.0% of 2): 1 death, 0 hangs, 0 errors, 0 wrong outputs; 1 not applicable\n",
		"  all   1 passed, 3 failed (25.0% of 4): 1 death, 1 hang, 0 errors, 1 wrong output; 1 not applicable\n",
		"not-applicable (1):\n  test/c.go — //go:build plan9 does not hold\n",
		"death (1):\n  test/b.go — the kernel was killed (signal: killed)\n",
		"hang (1):\n  examples/e.go\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
}

func TestDiffs(t *testing.T) {
	var b strings.Builder
	Diffs(&b, sample(), func(p Program) bool { return p.Suite == "examples" })
	got := b.String()
	for _, want := range []string{"=== examples/d.go: wrong-output", "cell: ok", "- y\n+ z\n", "=== examples/e.go: hang"} {
		if !strings.Contains(got, want) {
			t.Errorf("diffs lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "test/b.go") {
		t.Errorf("diffs show a program keep rejected:\n%s", got)
	}
}

func TestCompare(t *testing.T) {
	old, cur := sample(), sample()
	cur.Programs[1].Category = Pass                                                     // b: death → pass
	cur.Programs[0].Category = Error                                                    // a: pass → error
	cur.Programs[4].Category = Death                                                    // e: hang → death
	cur.Programs = append(cur.Programs[:2], cur.Programs[3:]...)                        // c removed
	cur.Programs = append(cur.Programs, Program{Name: "examples/f.go", Category: Pass}) // f added
	changes := Compare(old, cur)
	var got []string
	for _, c := range changes {
		got = append(got, c.Name+":"+string(c.From)+">"+string(c.To))
	}
	want := "examples/e.go:hang>death examples/f.go:>pass test/a.go:pass>error test/b.go:death>pass test/c.go:not-applicable>"
	if strings.Join(got, " ") != want {
		t.Errorf("changes %q, want %q", strings.Join(got, " "), want)
	}
	var b strings.Builder
	WriteComparison(&b, old, cur, []Group{{"all", []string{"test", "examples"}}})
	for _, s := range []string{"now passing (1):\n  test/b.go: death → pass\n", "no longer passing (1):\n  test/a.go: pass → error\n",
		"other changes (1):\n  examples/e.go: hang → death\n", "only in the new report (1):", "only in the old report (1):"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("comparison lacks %q:\n%s", s, b.String())
		}
	}
}
