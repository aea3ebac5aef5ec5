// A runtime error (an index out of range) panics with Go's message.
package main

import "fmt"

func at(xs []int, i int) int { return xs[i] }

func main() {
	xs := []int{10, 20, 30}
	fmt.Println("in range:", at(xs, 2))
	fmt.Println("out of range:", at(xs, 5))
}
