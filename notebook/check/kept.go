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
	why        string // the compiler's message
}

// keptListMax is how many declarations keptWarning names before it counts.
const keptListMax = 6

// keptWarning is the one line a cell gets about every earlier declaration
// it leaves on its old definition: the names, not the compiler's messages
// (Cell.Kept has those), so that a redefinition does not bury the cell's
// output under a page of warnings.
func keptWarning(dropped map[*Entry]dropNote) string {
	var kept, methods []string
	types := map[string]bool{}
	for _, d := range dropped {
		if d.notCarried != "" {
			methods = append(methods, d.what)
			types[d.notCarried] = true
		} else {
			kept = append(kept, d.what)
		}
	}
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
	why := ": they do not compile with this cell's declarations"
	if len(dropped) == 1 {
		why = ": it does not compile with this cell's declarations"
	}
	return "warning: " + strings.Join(parts, "; ") + why
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
