// Literal values of Go's basic types and the operators that combine them.
package main

import "fmt"

func main() {
	fmt.Println("tea" + "pot")
	fmt.Println("7 + 5 =", 7+5)
	fmt.Println("7 / 2 =", 7/2, "and 7 % 2 =", 7%2)
	fmt.Println("7.0 / 2 =", 7.0/2)
	fmt.Println(true && !false, true || false, !true)
	fmt.Println('A', string(rune('A'+2)))
	fmt.Println(1<<10, 0x1F, 0o17, 0b101, 1_000_000)
	fmt.Println(3+4i, real(3+4i), imag(3+4i))
}
