// Declaring variables: var with and without initializers, short
// declarations, zero values and multiple assignment.
package main

import "fmt"

func main() {
	var planet = "Mars"
	fmt.Println(planet)

	var width, height int = 640, 480
	fmt.Println(width * height)

	var ready = true
	fmt.Println(ready)

	var count int
	var ratio float64
	var label string
	var ptr *int
	fmt.Printf("%d %v %q %v\n", count, ratio, label, ptr)

	moons := 2
	moons, distance := moons+0, 227.9
	fmt.Println(moons, distance)

	a, b := 1, 2
	a, b = b, a
	fmt.Println(a, b)
}
