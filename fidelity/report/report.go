// Package report holds the fidelity harness's results: the JSON report
// written after every run (one entry per program, so two runs can be
// diffed), the summary printed from it, the diffs of failing programs, and
// the comparison of two reports.
package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/goaccel/goaccel/fidelity/cellrun"
)

// Category is the verdict on one program.
type Category string

// The categories. Pass and the four failures make up the programs that ran;
// NotApplicable programs did not run (constraint, or no reference).
const (
	Pass          Category = "pass"
	WrongOutput   Category = "wrong-output" // both ran alike, the output differs
	Error         Category = "error"        // the cell failed where go run succeeded, or vice versa, or differently
	Death         Category = "death"        // the child (the kernel) ended without replying
	Hang          Category = "hang"         // the cell did not end within the timeout
	NotApplicable Category = "not-applicable"
)

// Failures are the failing categories, in report order.
var Failures = []Category{Death, Hang, Error, WrongOutput}

// FormatVersion is the version of the JSON layout.
const FormatVersion = 1

// Report is one run of the harness.
type Report struct {
	FormatVersion int       `json:"format_version"`
	Started       time.Time `json:"started"`
	Seconds       float64   `json:"seconds"`
	GoVersion     string    `json:"go_version"`
	Platform      string    `json:"platform"` // GOOS/GOARCH[+cgo]
	// Label says what was measured (e.g. the engine's git commit).
	Label    string   `json:"label,omitempty"`
	Timeout  string   `json:"timeout"`
	Parallel int      `json:"parallel"`
	Suites   []string `json:"suites"`
	Globs    []string `json:"globs,omitempty"`
	// Restarts, for a run of one session, counts the sessions started
	// again after one died or got stuck (each costs the program it ran).
	Restarts int       `json:"session_restarts,omitempty"`
	Programs []Program `json:"programs"`
}

// Program is the result for one program.
type Program struct {
	Suite    string   `json:"suite"`
	Name     string   `json:"name"`
	Path     string   `json:"path"`
	Category Category `json:"category"`
	// Detail says in one line why the program did not pass (or was not
	// applicable).
	Detail           string  `json:"detail,omitempty"`
	Nondeterministic bool    `json:"nondeterministic,omitempty"`
	GoRun            *GoRun  `json:"go_run,omitempty"`
	Cell             *Cell   `json:"cell,omitempty"`
	Seconds          float64 `json:"seconds"`
}

// GoRun is the reference run.
type GoRun struct {
	Output      string `json:"output"`
	Truncated   bool   `json:"truncated,omitempty"`
	ExitCode    int    `json:"exit_code"`
	Status      string `json:"status"`
	BuildFailed bool   `json:"build_failed,omitempty"`
	BuildOutput string `json:"build_output,omitempty"`
	TimedOut    bool   `json:"timed_out,omitempty"`
	// Failure is how the program failed when it exited non-zero.
	Failure      *Failure `json:"failure,omitempty"`
	BuildSeconds float64  `json:"build_seconds"`
	RunSeconds   float64  `json:"run_seconds"`
}

// Failure is how a reference run failed (see fidelity.ParseFailure).
type Failure struct {
	Kind    string `json:"kind"` // "panic", "fatal error", "exit" or "signal"
	Message string `json:"message,omitempty"`
	Code    int    `json:"code,omitempty"`
	// Before is the output before the runtime's crash report: what the
	// cell's output is compared with.
	Before string `json:"before"`
}

// Expected is the output a cell must print to match: go run's output, or
// the part before the crash report when the program crashed.
func (g *GoRun) Expected() string {
	if g.Failure != nil {
		return g.Failure.Before
	}
	return g.Output
}

// Cell is the run as one notebook cell.
type Cell struct {
	Output    string         `json:"output"`
	Truncated bool           `json:"truncated,omitempty"`
	Error     *cellrun.Error `json:"error,omitempty"`
	Replied   bool           `json:"replied"`
	TimedOut  bool           `json:"timed_out,omitempty"`
	// Displays counts display_data and similar outputs (not compared).
	Displays int `json:"displays,omitempty"`
	// Status and Stderr are the child process's exit status and its own
	// stderr (a crash report when it died).
	Status         string  `json:"status"`
	Stderr         string  `json:"stderr,omitempty"`
	StartupSeconds float64 `json:"startup_seconds"`
	Seconds        float64 `json:"seconds"`
}

// Write stores r as indented JSON at path, creating its directory.
func Write(path string, r *Report) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// Read loads a report written by Write.
func Read(path string) (*Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("report: %s: %w", path, err)
	}
	if r.FormatVersion != FormatVersion {
		return nil, fmt.Errorf("report: %s: format version %d, want %d", path, r.FormatVersion, FormatVersion)
	}
	return &r, nil
}

// Counts tallies categories.
type Counts map[Category]int

// Ran is the number of programs that ran (everything but not-applicable).
func (c Counts) Ran() int { return c.Passed() + c.Failed() }

// Passed is the number of programs that passed.
func (c Counts) Passed() int { return c[Pass] }

// Failed is the number of programs that ran and did not pass.
func (c Counts) Failed() int {
	n := 0
	for _, f := range Failures {
		n += c[f]
	}
	return n
}

// Count tallies the programs for which keep returns true.
func (r *Report) Count(keep func(Program) bool) Counts {
	c := Counts{}
	for _, p := range r.Programs {
		if keep(p) {
			c[p.Category]++
		}
	}
	return c
}
