// os.Exit ends the program at once with a status; deferred calls do not
// run.
package main

import (
	"fmt"
	"os"
)

func main() {
	defer fmt.Println("this deferred call never runs")
	fmt.Println("exiting with status 3")
	os.Exit(3)
}
