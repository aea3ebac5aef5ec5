// Interfaces: implicit implementation, dynamic dispatch, type assertions
// and the empty interface.
package main

import (
	"fmt"
	"math"
)

type shape interface {
	area() float64
	perimeter() float64
}

type square struct{ side float64 }
type circle struct{ r float64 }

func (s square) area() float64      { return s.side * s.side }
func (s square) perimeter() float64 { return 4 * s.side }
func (c circle) area() float64      { return math.Pi * c.r * c.r }
func (c circle) perimeter() float64 { return 2 * math.Pi * c.r }

func report(s shape) {
	fmt.Printf("%T: area %.2f, perimeter %.2f\n", s, s.area(), s.perimeter())
	if c, ok := s.(circle); ok {
		fmt.Println("  radius", c.r)
	}
}

func main() {
	shapes := []shape{square{2}, circle{1}, square{0.5}}
	total := 0.0
	for _, s := range shapes {
		report(s)
		total += s.area()
	}
	fmt.Printf("total area %.3f\n", total)

	var s shape
	fmt.Println(s == nil)
	var anything any = 42
	if _, ok := anything.(shape); !ok {
		fmt.Println("42 is not a shape")
	}
	var stringer fmt.Stringer
	fmt.Println(stringer == nil)
}
