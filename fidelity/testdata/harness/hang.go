// hang.go blocks for ever. go run's runtime sees that every goroutine is
// asleep and stops the program at once ("fatal error: all goroutines are
// asleep - deadlock!"); a kernel always has other goroutines, so the cell
// waits until the harness's timeout: a hang.
package main

import "fmt"

func main() {
	fmt.Println("waiting for nothing")
	select {}
}
