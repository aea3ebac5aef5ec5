// Goroutines printing as they run: the interleaving differs from run to
// run.
// fidelity: nondeterministic
package main

import (
	"fmt"
	"time"
)

func chatter(name string) {
	for i := range 3 {
		fmt.Println(name, i)
		time.Sleep(time.Millisecond)
	}
}

func main() {
	go chatter("left")
	go chatter("right")
	chatter("main")
	time.Sleep(20 * time.Millisecond)
	fmt.Println("done")
}
