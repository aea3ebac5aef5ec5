// Every shape of Go's only loop.
package main

import "fmt"

func main() {
	n := 1
	for n < 50 {
		n *= 3
	}
	fmt.Println("first power of 3 past 50:", n)

	for i := 10; i > 0; i -= 4 {
		fmt.Print(i, " ")
	}
	fmt.Println()

	for i := range 4 {
		fmt.Print("#", i)
	}
	fmt.Println()

	steps := 0
	for {
		steps++
		if steps == 5 {
			break
		}
	}
	fmt.Println("steps:", steps)

	for i := range 8 {
		if i%3 != 0 {
			continue
		}
		fmt.Println("multiple of three:", i)
	}

outer:
	for row := 0; row < 3; row++ {
		for col := 0; col < 3; col++ {
			if col > row {
				continue outer
			}
			if row == 2 && col == 1 {
				break outer
			}
			fmt.Print(row, col, " ")
		}
	}
	fmt.Println()
}
