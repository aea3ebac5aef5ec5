// os.Args holds the program's name and its arguments; run without
// arguments, there are none.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Println("have a program name:", len(os.Args) >= 1 && os.Args[0] != "")
	args := os.Args[1:]
	fmt.Println("arguments:", len(args), args)
	if len(args) > 0 {
		fmt.Println("first:", args[0])
	}
}
