// Command fidelity runs Go programs as notebook cells through goaccel's
// engine and compares them with `go run` (see package fidelity): `make
// fidelity` builds it and runcell and runs it.
//
//	fidelity [-suite test,examples] [-run 'fixedbugs/issue5*.go,closures.go'] [-j 2] [-timeout 30s] [-split | -session]
//	         [-runcell bin/runcell] [-results fidelity/results] [-diff] [-list] [-v]
//	fidelity -report fidelity/results/latest.json [-suite ...] [-run ...] [-diff] [-list]
//	fidelity -compare OLD.json NEW.json
//
// Each flag defaults to an environment variable, so make passes them
// through: FIDELITY_SUITE, FIDELITY_RUN, FIDELITY_J, FIDELITY_TIMEOUT,
// FIDELITY_RESULTS, FIDELITY_DIFF, FIDELITY_LIST, FIDELITY_LABEL,
// FIDELITY_SPLIT, FIDELITY_SESSION. A run
// writes its report to RESULTS/fidelity-TIMESTAMP.json and
// RESULTS/latest.json. The exit status is 0 whatever the programs did; it
// is non-zero only when the harness itself failed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goaccel/goaccel/fidelity"
	"github.com/goaccel/goaccel/fidelity/corpus"
	"github.com/goaccel/goaccel/fidelity/report"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "fidelity:", strings.TrimPrefix(err.Error(), "fidelity: "))
		}
		os.Exit(1)
	}
}

type config struct {
	runcell, examples, results, label, reportPath string
	suites, globs                                 []string
	parallel                                      int
	timeout                                       time.Duration
	diff, list, verbose, compare, split, session  bool
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c config
	fs := flag.NewFlagSet("fidelity", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.runcell, "runcell", os.Getenv("FIDELITY_RUNCELL"), "the runcell `binary` (built into a temporary directory when empty)")
	fs.StringVar(&c.examples, "examples", envOr("FIDELITY_EXAMPLES", "fidelity/testdata/examples"), "the examples suite's `dir`")
	fs.StringVar(&c.results, "results", envOr("FIDELITY_RESULTS", "fidelity/results"), "write the JSON report into `dir`")
	fs.StringVar(&c.label, "label", os.Getenv("FIDELITY_LABEL"), "what is measured, recorded in the report (default: git describe)")
	suites := fs.String("suite", os.Getenv("FIDELITY_SUITE"), "comma-separated `suites` to run: "+strings.Join(corpus.Suites, ", ")+", or go (the first three); empty: all")
	globs := fs.String("run", os.Getenv("FIDELITY_RUN"), "comma-separated `globs` selecting programs by name (fixedbugs/issue5*.go) or base name (closures.go)")
	fs.IntVar(&c.parallel, "j", envInt("FIDELITY_J", fidelity.DefaultParallel), "programs run at `once`")
	fs.DurationVar(&c.timeout, "timeout", envDuration("FIDELITY_TIMEOUT", fidelity.DefaultTimeout), "time limit of each run, go run's and the cell's")
	fs.BoolVar(&c.diff, "diff", envBool("FIDELITY_DIFF"), "print the error and output diff of each failing program")
	fs.BoolVar(&c.list, "list", envBool("FIDELITY_LIST"), "list the failing programs by category")
	fs.BoolVar(&c.split, "split", envBool("FIDELITY_SPLIT"), "run each program as a notebook user would write it: a cell per declaration, in an order where cells use only earlier cells, main's last")
	fs.BoolVar(&c.session, "session", envBool("FIDELITY_SESSION"), "run the programs back to back in ONE engine, in order, as a user who keeps one kernel does (each judged against its own go run)")
	fs.BoolVar(&c.verbose, "v", false, "print every program as it ends (default: deaths and hangs, and a count every 50 programs)")
	fs.StringVar(&c.reportPath, "report", "", "read this report `file` instead of running (with -diff, -list, -suite, -run)")
	fs.BoolVar(&c.compare, "compare", false, "compare two reports: fidelity -compare OLD.json NEW.json")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c.suites = expandSuites(splitList(*suites))
	c.globs = splitList(*globs)

	if c.compare {
		if fs.NArg() != 2 {
			return errors.New("usage: fidelity -compare OLD.json NEW.json")
		}
		old, err := report.Read(fs.Arg(0))
		if err != nil {
			return err
		}
		cur, err := report.Read(fs.Arg(1))
		if err != nil {
			return err
		}
		report.WriteComparison(stdout, old, cur, groups(union(old.Suites, cur.Suites)))
		return nil
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected arguments %q (use -run to select programs)", fs.Args())
	}
	if c.reportPath != "" {
		r, err := report.Read(c.reportPath)
		if err != nil {
			return err
		}
		show(stdout, r, c)
		return nil
	}
	return measure(ctx, c, stdout, stderr)
}

func measure(ctx context.Context, c config, stdout, stderr io.Writer) error {
	if c.runcell == "" {
		tmp, err := os.MkdirTemp("", "fidelity-bin-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		fmt.Fprintln(stderr, "fidelity: building runcell")
		if c.runcell, err = fidelity.BuildRuncell(ctx, "go", ".", tmp); err != nil {
			return err
		}
	}
	if c.label == "" {
		c.label = gitDescribe(ctx)
	}
	if c.split {
		c.label += " (split into cells)"
	}
	if c.session {
		c.label += " (one session)"
	}
	start := time.Now()
	r, err := fidelity.Run(ctx, fidelity.Options{
		Runcell:     c.runcell,
		ExamplesDir: c.examples,
		Suites:      c.suites,
		Globs:       c.globs,
		Parallel:    c.parallel,
		Timeout:     c.timeout,
		Label:       c.label,
		Split:       c.split,
		Session:     c.session,
		Progress: func(done, total int, p report.Program) {
			if c.verbose || p.Category == report.Death || p.Category == report.Hang {
				fmt.Fprintf(stderr, "[%d/%d] %s: %s", done, total, p.Name, p.Category)
				if p.Detail != "" {
					fmt.Fprintf(stderr, " — %s", firstLine(p.Detail))
				}
				fmt.Fprintf(stderr, " (%.1fs)\n", p.Seconds)
			} else if done%50 == 0 {
				fmt.Fprintf(stderr, "[%d/%d] %s elapsed\n", done, total, time.Since(start).Round(time.Second))
			}
		},
	})
	if err != nil {
		return err
	}
	name := filepath.Join(c.results, "fidelity-"+r.Started.Format("20060102-150405")+".json")
	if err := report.Write(name, r); err != nil {
		return err
	}
	if err := report.Write(filepath.Join(c.results, "latest.json"), r); err != nil {
		return err
	}
	show(stdout, r, c)
	fmt.Fprintf(stdout, "report: %s (and latest.json beside it)\n", name)
	return nil
}

// show prints a report's summary and, as asked, its lists and diffs,
// restricted to the -suite and -run selection.
func show(w io.Writer, r *report.Report, c config) {
	keep := func(p report.Program) bool {
		if len(c.suites) > 0 && !slices.Contains(c.suites, p.Suite) {
			return false
		}
		return corpus.Selected(p.Name, c.globs)
	}
	sel := *r
	sel.Programs = nil
	for _, p := range r.Programs {
		if keep(p) {
			sel.Programs = append(sel.Programs, p)
		}
	}
	present := []string{}
	for _, s := range corpus.Suites {
		if slices.ContainsFunc(sel.Programs, func(p report.Program) bool { return p.Suite == s }) {
			present = append(present, s)
		}
	}
	if c.diff {
		report.Diffs(w, &sel, nil)
	}
	if len(sel.Programs) != len(r.Programs) {
		fmt.Fprintf(w, "selected %d of the report's %d programs\n", len(sel.Programs), len(r.Programs))
	}
	if c.list {
		for _, cat := range []report.Category{report.Error, report.WrongOutput} {
			report.List(w, &sel, cat, nil)
		}
	}
	report.Summary(w, &sel, groups(present))
}

// groups are the summary lines: each suite, the Go suites together when
// more than one ran, and everything when that is more than the Go suites.
func groups(suites []string) []report.Group {
	var gs []report.Group
	var goSuites []string
	for _, s := range corpus.Suites {
		if slices.Contains(suites, s) {
			gs = append(gs, report.Group{Name: s, Suites: []string{s}})
			if slices.Contains(corpus.GoSuites, s) {
				goSuites = append(goSuites, s)
			}
		}
	}
	if len(goSuites) > 1 {
		gs = append(gs, report.Group{Name: "go (" + strings.Join(goSuites, "+") + ")", Suites: goSuites})
	}
	if len(gs) > 1 && len(goSuites) < len(gs)-1 { // not just the Go suites and their sum
		gs = append(gs, report.Group{Name: "all", Suites: suites})
	}
	return gs
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// expandSuites replaces "go" by the suites from GOROOT/test.
func expandSuites(in []string) []string {
	var out []string
	for _, s := range in {
		if s == "go" {
			out = append(out, corpus.GoSuites...)
		} else {
			out = append(out, s)
		}
	}
	return out
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func gitDescribe(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "git", "describe", "--always", "--dirty", "--exclude", "*").Output()
	if err != nil {
		return ""
	}
	return "commit " + strings.TrimSpace(string(out))
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func envInt(k string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(k)); err == nil {
		return n
	}
	return def
}

func envDuration(k string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(k)); err == nil {
		return d
	}
	return def
}

func envBool(k string) bool {
	b, _ := strconv.ParseBool(os.Getenv(k))
	return b
}
