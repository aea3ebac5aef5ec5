// if, else if and else, including an if with an initializing statement.
package main

import (
	"fmt"
	"strconv"
)

func classify(n int) string {
	if n < 0 {
		return "negative"
	} else if n == 0 {
		return "zero"
	} else if n%2 == 0 {
		return "even"
	}
	return "odd"
}

func main() {
	for _, n := range []int{-4, 0, 7, 12} {
		fmt.Println(n, classify(n))
	}
	if v, err := strconv.Atoi("42x"); err != nil {
		fmt.Println("not a number:", err)
	} else {
		fmt.Println("parsed", v)
	}
	if score := 83; score >= 90 {
		fmt.Println("grade A")
	} else if score >= 80 {
		fmt.Println("grade B")
	} else {
		fmt.Println("grade C or below")
	}
}
