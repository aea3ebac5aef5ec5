// Writing to a nil map panics; the deferred call runs before the program
// ends.
package main

import "fmt"

func main() {
	defer fmt.Println("deferred call runs during the panic")
	var registry map[string]int
	fmt.Println("reading a nil map is fine:", registry["x"])
	registry["x"] = 1
}
