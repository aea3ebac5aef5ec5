// Recursive functions and recursive closures.
package main

import "fmt"

func fib(n int) int {
	if n < 2 {
		return n
	}
	return fib(n-1) + fib(n-2)
}

func hanoi(n int, from, to, via string, moves *int) {
	if n == 0 {
		return
	}
	hanoi(n-1, from, via, to, moves)
	*moves++
	hanoi(n-1, via, to, from, moves)
}

func main() {
	for _, n := range []int{0, 1, 10, 20} {
		fmt.Printf("fib(%d) = %d\n", n, fib(n))
	}
	moves := 0
	hanoi(6, "A", "C", "B", &moves)
	fmt.Println("hanoi(6):", moves, "moves")

	var digits func(n int) []int
	digits = func(n int) []int {
		if n < 10 {
			return []int{n}
		}
		return append(digits(n/10), n%10)
	}
	fmt.Println(digits(90210))
}
