// Arrays: fixed length, value semantics, literals, indexes and two
// dimensions.
package main

import "fmt"

func main() {
	var scores [4]int
	fmt.Println("empty:", scores, "len", len(scores))
	scores[2] = 90
	fmt.Println("set:", scores, scores[2])

	primes := [...]int{2, 3, 5, 7, 11}
	fmt.Println(primes, len(primes))

	sparse := [6]string{1: "b", 4: "e"}
	fmt.Printf("%q\n", sparse)

	copyOf := primes
	copyOf[0] = 100
	fmt.Println(primes[0], copyOf[0], primes == [5]int{2, 3, 5, 7, 11})

	var grid [3][4]int
	for r := range 3 {
		for c := range 4 {
			grid[r][c] = r * c
		}
	}
	fmt.Println(grid)
}
