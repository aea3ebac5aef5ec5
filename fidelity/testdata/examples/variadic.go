// Variadic functions and spreading a slice into one.
package main

import (
	"fmt"
	"strings"
)

func total(prices ...float64) float64 {
	sum := 0.0
	for _, p := range prices {
		sum += p
	}
	return sum
}

func join(sep string, parts ...string) string {
	return fmt.Sprintf("%d parts: %s", len(parts), strings.Join(parts, sep))
}

func main() {
	fmt.Println(total())
	fmt.Println(total(1.5, 2.25))
	basket := []float64{3, 4, 5.5}
	fmt.Println(total(basket...))
	fmt.Println(join("-", "a", "b", "c"))
	fmt.Println(join("+"))
}
