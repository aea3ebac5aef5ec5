package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// Change is a program whose category differs between two reports. From or
// To is "" when the program is in one report only.
type Change struct {
	Name     string
	From, To Category
	Detail   string // the new report's detail (the old one's if removed)
}

// Compare lists the programs whose category changed from old to new, by
// name.
func Compare(old, new *Report) []Change {
	before := map[string]Program{}
	for _, p := range old.Programs {
		before[p.Name] = p
	}
	var out []Change
	seen := map[string]bool{}
	for _, p := range new.Programs {
		seen[p.Name] = true
		o, ok := before[p.Name]
		switch {
		case !ok:
			out = append(out, Change{Name: p.Name, To: p.Category, Detail: p.Detail})
		case o.Category != p.Category:
			out = append(out, Change{Name: p.Name, From: o.Category, To: p.Category, Detail: p.Detail})
		}
	}
	for _, p := range old.Programs {
		if !seen[p.Name] {
			out = append(out, Change{Name: p.Name, From: p.Category, Detail: p.Detail})
		}
	}
	slices.SortFunc(out, func(a, b Change) int { return strings.Compare(a.Name, b.Name) })
	return out
}

const (
	onlyNew = "only in the new report"
	onlyOld = "only in the old report"
	// maxOnlyListed is how many programs found in one report only are named.
	maxOnlyListed = 10
)

// WriteComparison writes the changes from old to new in three groups
// (now passing, no longer passing, other changes), then the programs in
// one report only, then both reports' overall lines.
func WriteComparison(w io.Writer, old, new *Report, groups []Group) {
	changes := Compare(old, new)
	sections := []struct {
		title string
		keep  func(Change) bool
	}{
		{"now passing", func(c Change) bool { return c.From != "" && c.To == Pass }},
		{"no longer passing", func(c Change) bool { return c.From == Pass && c.To != "" }},
		{"other changes", func(c Change) bool {
			return c.From != "" && c.To != "" && c.From != Pass && c.To != Pass
		}},
		{onlyNew, func(c Change) bool { return c.From == "" }},
		{onlyOld, func(c Change) bool { return c.To == "" }},
	}
	for _, s := range sections {
		var cs []Change
		for _, c := range changes {
			if s.keep(c) {
				cs = append(cs, c)
			}
		}
		if len(cs) == 0 {
			continue
		}
		fmt.Fprintf(w, "%s (%d):\n", s.title, len(cs))
		more := 0
		if s.title == onlyNew || s.title == onlyOld {
			// Reports of different selections: their difference is long and dull.
			if len(cs) > maxOnlyListed {
				more = len(cs) - maxOnlyListed
				cs = cs[:maxOnlyListed]
			}
		}
		for _, c := range cs {
			switch {
			case c.From == "":
				fmt.Fprintf(w, "  %s: %s", c.Name, c.To)
			case c.To == "":
				fmt.Fprintf(w, "  %s: was %s", c.Name, c.From)
			default:
				fmt.Fprintf(w, "  %s: %s → %s", c.Name, c.From, c.To)
			}
			if c.Detail != "" && c.To != Pass {
				fmt.Fprintf(w, " — %s", oneLine(c.Detail, 120))
			}
			fmt.Fprintln(w)
		}
		if more > 0 {
			fmt.Fprintf(w, "  … and %d more\n", more)
		}
	}
	if len(changes) == 0 {
		fmt.Fprintln(w, "no program changed category")
	}
	width := 0
	for _, g := range groups {
		width = max(width, len(g.Name))
	}
	for _, x := range []struct {
		name string
		r    *Report
	}{{"old", old}, {"new", new}} {
		fmt.Fprintf(w, "%s: %s", x.name, x.r.Started.Format("2006-01-02 15:04"))
		if x.r.Label != "" {
			fmt.Fprintf(w, " (%s)", x.r.Label)
		}
		fmt.Fprintln(w)
		for _, g := range groups {
			c := x.r.Count(func(p Program) bool { return slices.Contains(g.Suites, p.Suite) })
			fmt.Fprintf(w, "  %-*s  %s\n", width, g.Name, c.Line())
		}
	}
}
