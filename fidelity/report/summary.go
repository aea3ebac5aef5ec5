package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// Group is a line of the summary: one suite, or several added up.
type Group struct {
	Name   string
	Suites []string
}

// Summary writes a run's header, one line per group —
//
//	test        93 passed, 46 failed (66.9% of 139): 2 deaths, 1 hang, 30 errors, 13 wrong outputs; 2 not applicable
//
// — and the programs that were not applicable, killed the kernel or hung.
func Summary(w io.Writer, r *Report, groups []Group) {
	fmt.Fprintf(w, "fidelity: %s %s, %s in %s (timeout %s, %d in parallel)",
		r.GoVersion, r.Platform, plural(len(r.Programs), "program", "programs"), fmtSeconds(r.Seconds), r.Timeout, r.Parallel)
	if r.Label != "" {
		fmt.Fprintf(w, ", %s", r.Label)
	}
	if r.Restarts > 0 {
		fmt.Fprintf(w, "; the session was started again %s", plural(r.Restarts, "time", "times"))
	}
	fmt.Fprintln(w)
	width := 0
	for _, g := range groups {
		width = max(width, len(g.Name))
	}
	for _, g := range groups {
		c := r.Count(func(p Program) bool { return slices.Contains(g.Suites, p.Suite) })
		fmt.Fprintf(w, "  %-*s  %s\n", width, g.Name, c.Line())
	}
	for _, cat := range []Category{NotApplicable, Death, Hang} {
		List(w, r, cat, nil)
	}
}

// Line is "N passed, M failed (P% of N+M): D deaths, H hangs, E errors,
// W wrong outputs; K not applicable".
func (c Counts) Line() string {
	pct := 0.0
	if c.Ran() > 0 {
		pct = 100 * float64(c.Passed()) / float64(c.Ran())
	}
	return fmt.Sprintf("%d passed, %d failed (%.1f%% of %d): %s, %s, %s, %s; %d not applicable",
		c.Passed(), c.Failed(), pct, c.Ran(),
		plural(c[Death], "death", "deaths"), plural(c[Hang], "hang", "hangs"),
		plural(c[Error], "error", "errors"), plural(c[WrongOutput], "wrong output", "wrong outputs"),
		c[NotApplicable])
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func fmtSeconds(s float64) string {
	if s < 60 {
		return fmt.Sprintf("%.1fs", s)
	}
	return fmt.Sprintf("%dm%02ds", int(s)/60, int(s)%60)
}

// List writes the programs of category cat (those keep accepts, all when
// keep is nil) with their details; nothing when there are none.
func List(w io.Writer, r *Report, cat Category, keep func(Program) bool) {
	var ps []Program
	for _, p := range r.Programs {
		if p.Category == cat && (keep == nil || keep(p)) {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		return
	}
	fmt.Fprintf(w, "%s (%d):\n", cat, len(ps))
	for _, p := range ps {
		fmt.Fprintf(w, "  %s", p.Name)
		if p.Detail != "" {
			fmt.Fprintf(w, " — %s", oneLine(p.Detail, 160))
		}
		fmt.Fprintln(w)
	}
}

// oneLine shortens s to one line of at most n runes.
func oneLine(s string, n int) string {
	s, _, cut := strings.Cut(s, "\n")
	r := []rune(s)
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	if cut {
		return s + " …"
	}
	return s
}

// Diffs writes, for each failing program that keep accepts (all when keep
// is nil), why it failed, the cell's error and a line diff of go run's
// output against the cell's.
func Diffs(w io.Writer, r *Report, keep func(Program) bool) {
	for _, p := range r.Programs {
		if p.Category == Pass || p.Category == NotApplicable || (keep != nil && !keep(p)) {
			continue
		}
		fmt.Fprintf(w, "=== %s: %s", p.Name, p.Category)
		if p.Detail != "" {
			fmt.Fprintf(w, " — %s", p.Detail)
		}
		fmt.Fprintln(w)
		if g := p.GoRun; g != nil {
			fmt.Fprintf(w, "go run: %s", g.Status)
			if f := g.Failure; f != nil && (f.Kind == "panic" || f.Kind == "fatal error") {
				fmt.Fprintf(w, " (%s: %s)", f.Kind, f.Message)
			}
			fmt.Fprintln(w)
		}
		if c := p.Cell; c != nil {
			switch {
			case c.TimedOut:
				fmt.Fprintln(w, "cell: timed out")
			case !c.Replied:
				fmt.Fprintf(w, "cell: the child ended without a reply (%s)\n", c.Status)
			case c.Error != nil:
				fmt.Fprintf(w, "cell error:\n%s\n", indent(c.Error.Text(), "    "))
			default:
				fmt.Fprintln(w, "cell: ok")
			}
			if !c.Replied && c.Stderr != "" {
				fmt.Fprintf(w, "child stderr:\n%s\n", indent(tail(c.Stderr, 40), "    "))
			}
		}
		if p.GoRun != nil && p.Cell != nil {
			want, what := p.GoRun.Expected(), "go run"
			if p.GoRun.Failure != nil && p.GoRun.Failure.Kind != "exit" {
				what = "go run before its crash report"
			}
			if want == p.Cell.Output {
				fmt.Fprintln(w, "output: identical")
			} else {
				fmt.Fprintf(w, "output (- %s, + cell):\n", what)
				io.WriteString(w, LineDiff(want, p.Cell.Output))
			}
		}
		fmt.Fprintln(w)
	}
}

func indent(s, pre string) string {
	return pre + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+pre)
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("… %d lines before", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
