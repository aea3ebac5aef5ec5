// Closures capture variables, not values; each loop iteration has its own
// variable (Go 1.22 semantics).
package main

import "fmt"

func counter(start int) (next func() int, reset func()) {
	n := start
	next = func() int {
		n++
		return n
	}
	reset = func() { n = start }
	return next, reset
}

func main() {
	next, reset := counter(10)
	fmt.Println(next(), next(), next())
	reset()
	fmt.Println(next())

	other, _ := counter(0)
	fmt.Println(other(), next())

	var printers []func()
	for i := range 3 {
		printers = append(printers, func() { fmt.Print(i, " ") })
	}
	for j := 0; j < 3; j++ {
		printers = append(printers, func() { fmt.Print(j*10, " ") })
	}
	for _, p := range printers {
		p()
	}
	fmt.Println()

	n := 0
	for range 3 {
		func() { n++ }()
	}
	fmt.Println("n =", n)
}
