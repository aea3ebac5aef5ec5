package check

import (
	"fmt"
	"sort"
	"strings"
)

// dropNote is an earlier declaration a cell leaves on its old definition
// because recompiling it against the cell fails.
type dropNote struct {
	what       string // describe(entry): "func f (cell[1])"
	notCarried string // for a method not carried over to a redefined type: the type's name
	promoted   bool   // not carried: the new type has the name through an embedded field (why says which)
	why        string // the compiler's message
}

// keptListMax is how many declarations keptWarning names before it counts.
const keptListMax = 6

// keptWarning is the one line a cell gets about every earlier declaration
// it leaves on its old definition: the names, not the compiler's messages
// (Cell.Kept has those), so that a redefinition does not bury the cell's
// output under a page of warnings. A method the new type has through an
// embedded field gets a line of its own: it compiles, it is not wanted.
func keptWarning(dropped map[*Entry]dropNote) []string {
	var kept, methods, hidden []string
	types := map[string]bool{}
	for _, d := range dropped {
		switch {
		case d.promoted:
			hidden = append(hidden, fmt.Sprintf("%s is not carried over: %s", d.what, d.why))
		case d.notCarried != "":
			methods = append(methods, d.what)
			types[d.notCarried] = true
		default:
			kept = append(kept, d.what)
		}
	}
	var out []string
	var parts []string
	if len(kept) > 0 {
		verb := "keeps its previous definition"
		if len(kept) > 1 {
			verb = "keep their previous definitions"
		}
		parts = append(parts, nameList(kept)+" "+verb)
	}
	if len(methods) > 0 {
		var names []string
		for t := range types {
			names = append(names, t)
		}
		sort.Strings(names)
		verb := "is"
		if len(methods) > 1 {
			verb = "are"
		}
		parts = append(parts, fmt.Sprintf("%s %s not carried over to the new %s", nameList(methods), verb, strings.Join(names, ", ")))
	}
	if len(parts) > 0 {
		why := ": they do not compile with this cell's declarations"
		if len(kept)+len(methods) == 1 {
			why = ": it does not compile with this cell's declarations"
		}
		out = append(out, "warning: "+strings.Join(parts, "; ")+why)
	}
	sort.Strings(hidden)
	for _, h := range hidden {
		out = append(out, "warning: "+h)
	}
	return out
}

// nameList joins sorted names, "a, b and c", naming keptListMax at most.
func nameList(names []string) string {
	sort.Strings(names)
	if len(names) > keptListMax {
		return strings.Join(names[:keptListMax], ", ") + fmt.Sprintf(" and %d more", len(names)-keptListMax)
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
