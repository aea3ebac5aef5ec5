// Sorting built-in types with slices.Sort and the sort package.
package main

import (
	"fmt"
	"slices"
	"sort"
)

func main() {
	words := []string{"kiwi", "Banana", "apple", "cherry"}
	slices.Sort(words)
	fmt.Println(words)

	nums := []int{42, -1, 7, 7, 0}
	slices.Sort(nums)
	fmt.Println(nums, slices.IsSorted(nums))
	i, found := slices.BinarySearch(nums, 7)
	fmt.Println(i, found)

	floats := []float64{2.5, -3, 1e3}
	sort.Float64s(floats)
	fmt.Println(floats)

	desc := []int{3, 1, 2}
	sort.Sort(sort.Reverse(sort.IntSlice(desc)))
	fmt.Println(desc)
}
