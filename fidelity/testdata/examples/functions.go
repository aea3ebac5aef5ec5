// Declaring and calling functions, functions as values.
package main

import "fmt"

func area(w, h float64) float64 {
	return w * h
}

func greet(name string, times int) string {
	s := ""
	for range times {
		s += "hi " + name + "! "
	}
	return s
}

func apply(f func(int) int, xs []int) []int {
	out := make([]int, 0, len(xs))
	for _, x := range xs {
		out = append(out, f(x))
	}
	return out
}

func square(x int) int { return x * x }

func main() {
	fmt.Println(area(3, 4.5))
	fmt.Println(greet("Kim", 2))
	fmt.Println(apply(square, []int{1, 2, 3}))
	double := func(x int) int { return 2 * x }
	fmt.Println(apply(double, []int{1, 2, 3}))
	fmt.Printf("%T\n", apply)
}
