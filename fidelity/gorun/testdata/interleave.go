package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Println("out 1")
	fmt.Fprintln(os.Stderr, "err 1")
	fmt.Println("out 2")
	os.Exit(3)
}
