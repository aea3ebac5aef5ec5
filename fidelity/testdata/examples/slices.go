// Slices: make, append, copy, slicing, sharing of the backing array, and
// the slices package.
package main

import (
	"fmt"
	"slices"
)

func main() {
	var none []string
	fmt.Println(none == nil, len(none))

	names := make([]string, 2, 5)
	names[0], names[1] = "ada", "bob"
	names = append(names, "cy", "dee")
	fmt.Println(names, len(names), cap(names))

	dup := make([]string, len(names))
	n := copy(dup, names)
	fmt.Println("copied", n, dup)

	mid := names[1:3]
	mid[0] = "BOB"
	fmt.Println(mid, names)

	fmt.Println(names[:2], names[2:], names[:])

	fmt.Println(slices.Contains(names, "cy"), slices.Index(names, "dee"))
	nums := []int{5, 2, 9, 1}
	slices.Sort(nums)
	fmt.Println(nums, slices.Max(nums), slices.Equal(nums, []int{1, 2, 5, 9}))

	tri := make([][]int, 4)
	for i := range tri {
		tri[i] = make([]int, i+1)
		for j := range tri[i] {
			tri[i][j] = i + j
		}
	}
	fmt.Println(tri)
}
