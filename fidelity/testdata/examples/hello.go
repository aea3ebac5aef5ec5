// The smallest program: one line of output.
package main

import "fmt"

func main() {
	fmt.Println("hello from a notebook cell")
}
