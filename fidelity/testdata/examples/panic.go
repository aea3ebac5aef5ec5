// An unrecovered panic ends the program with status 2 after printing its
// message; the output before it is kept.
package main

import (
	"fmt"
	"os"
)

func mustOpen(path string) *os.File {
	f, err := os.Open(path)
	if err != nil {
		panic(fmt.Sprintf("cannot open config: %v", err))
	}
	return f
}

func main() {
	fmt.Println("loading configuration")
	mustOpen("no-such-dir/settings.ini")
	fmt.Println("never printed")
}
