// Pointers: taking addresses, dereferencing, pointer receivers of
// functions, new, and nil.
package main

import "fmt"

func resetValue(v int) { v = 0 }

func resetPointer(p *int) { *p = 0 }

type node struct {
	val  int
	next *node
}

func main() {
	x := 7
	resetValue(x)
	fmt.Println("after resetValue:", x)
	resetPointer(&x)
	fmt.Println("after resetPointer:", x)

	p := &x
	*p += 5
	fmt.Println(x, *p, p == &x)

	q := new(float64)
	*q = 2.5
	fmt.Println(*q)

	var list *node
	for i := 3; i > 0; i-- {
		list = &node{val: i, next: list}
	}
	for n := list; n != nil; n = n.next {
		fmt.Print(n.val, " ")
	}
	fmt.Println()

	var nothing *node
	fmt.Println(nothing == nil)
}
