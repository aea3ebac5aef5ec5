// Sorting with custom comparisons: slices.SortFunc, SortStableFunc and
// sort.Slice.
package main

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
)

type runner struct {
	name string
	time float64
	club string
}

func main() {
	fruits := []string{"fig", "banana", "kiwi", "apricot"}
	slices.SortFunc(fruits, func(a, b string) int { return cmp.Compare(len(a), len(b)) })
	fmt.Println(fruits)

	runners := []runner{
		{"Ana", 12.1, "north"}, {"Ben", 11.8, "south"}, {"Cai", 12.1, "south"}, {"Dee", 11.8, "north"},
	}
	slices.SortStableFunc(runners, func(a, b runner) int {
		return cmp.Or(cmp.Compare(a.time, b.time), strings.Compare(a.club, b.club))
	})
	for _, r := range runners {
		fmt.Printf("%s %.1f %s\n", r.name, r.time, r.club)
	}

	byName := slices.Clone(runners)
	sort.Slice(byName, func(i, j int) bool { return byName[i].name > byName[j].name })
	fmt.Println(byName[0].name, byName[len(byName)-1].name)

	fastest := slices.MinFunc(runners, func(a, b runner) int { return cmp.Compare(a.time, b.time) })
	fmt.Println("fastest:", fastest.name)
}
