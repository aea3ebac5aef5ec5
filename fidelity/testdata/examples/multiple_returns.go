// Functions returning several values, named results, and ignoring some.
package main

import (
	"errors"
	"fmt"
)

func divmod(a, b int) (int, int) {
	return a / b, a % b
}

func minMax(xs []int) (lo, hi int, err error) {
	if len(xs) == 0 {
		err = errors.New("empty input")
		return
	}
	lo, hi = xs[0], xs[0]
	for _, x := range xs[1:] {
		lo, hi = min(lo, x), max(hi, x)
	}
	return
}

func main() {
	q, r := divmod(17, 5)
	fmt.Println(q, r)
	_, r = divmod(9, 4)
	fmt.Println("remainder only:", r)
	lo, hi, err := minMax([]int{4, -2, 11, 7})
	fmt.Println(lo, hi, err)
	_, _, err = minMax(nil)
	fmt.Println(err)
}
