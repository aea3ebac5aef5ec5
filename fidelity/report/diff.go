package report

import (
	"fmt"
	"strings"
)

// maxDiffCells bounds the work of LineDiff's table (lines × lines).
const maxDiffCells = 4_000_000

// LineDiff returns a line diff of a against b: unchanged lines start with
// two spaces, removed ones with "- ", added ones with "+ ". A line without
// a final newline is marked "⏎ missing". Long runs of unchanged lines are
// elided. Outputs too long to compare line by line are shown as their first
// differing line.
func LineDiff(a, b string) string {
	al, bl := splitLines(a), splitLines(b)
	if len(al)*len(bl) > maxDiffCells {
		return firstDifference(al, bl)
	}
	// lcs[i][j] is the length of the longest common subsequence of al[i:]
	// and bl[j:].
	lcs := make([][]int32, len(al)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(bl)+1)
	}
	for i := len(al) - 1; i >= 0; i-- {
		for j := len(bl) - 1; j >= 0; j-- {
			if al[i] == bl[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type op struct {
		mark byte
		line string
	}
	var ops []op
	i, j := 0, 0
	for i < len(al) || j < len(bl) {
		switch {
		case i < len(al) && j < len(bl) && al[i] == bl[j]:
			ops = append(ops, op{' ', al[i]})
			i++
			j++
		case i < len(al) && (j == len(bl) || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, op{'-', al[i]})
			i++
		default:
			ops = append(ops, op{'+', bl[j]})
			j++
		}
	}
	const context = 3
	// keep marks the changes and the unchanged lines next to them.
	keep := make([]bool, len(ops))
	for k, o := range ops {
		if o.mark != ' ' {
			for d := max(k-context, 0); d <= min(k+context, len(ops)-1); d++ {
				keep[d] = true
			}
		}
	}
	var out strings.Builder
	for k := 0; k < len(ops); k++ {
		if !keep[k] {
			n := k
			for n < len(ops) && !keep[n] {
				n++
			}
			fmt.Fprintf(&out, "  … %d unchanged lines\n", n-k)
			k = n - 1
			continue
		}
		fmt.Fprintf(&out, "%c %s\n", ops[k].mark, show(ops[k].line))
	}
	return out.String()
}

// splitLines splits s after each newline; a last line without one keeps
// no newline, so "a" and "a\n" differ.
func splitLines(s string) []string {
	parts := strings.SplitAfter(s, "\n")
	if parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

func show(line string) string {
	if strings.HasSuffix(line, "\n") {
		return strings.TrimSuffix(line, "\n")
	}
	return line + "  ⏎ missing"
}

func firstDifference(a, b []string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	var out strings.Builder
	fmt.Fprintf(&out, "  … %d equal lines; %d lines against %d, too long to diff; first difference:\n", i, len(a), len(b))
	if i < len(a) {
		fmt.Fprintf(&out, "- %s\n", show(a[i]))
	}
	if i < len(b) {
		fmt.Fprintf(&out, "+ %s\n", show(b[i]))
	}
	return out.String()
}
