// Constants: typed and untyped, constant expressions with arbitrary
// precision, and iota.
package main

import (
	"fmt"
	"math"
)

const greeting = "good morning"

const (
	kilo = 1000
	mega = kilo * kilo
	huge = 1 << 100 // only representable as an untyped constant
)

const (
	north = iota
	east
	south
	west
)

func main() {
	fmt.Println(greeting)
	fmt.Println(mega, huge>>98)
	const seconds = 86400
	days := 3
	fmt.Println(days*seconds, "seconds")
	fmt.Println(math.Sqrt(mega))
	fmt.Println(int64(mega) * 3)
	fmt.Println(north, east, south, west)
	const typed float32 = 1.0 / 3
	fmt.Printf("%T %v\n", typed, typed)
}
