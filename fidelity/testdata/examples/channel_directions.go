// Send-only and receive-only channel parameters.
package main

import (
	"fmt"
	"strings"
)

func produce(words []string, out chan<- string) {
	for _, w := range words {
		out <- w
	}
	close(out)
}

func shout(in <-chan string, out chan<- string) {
	for w := range in {
		out <- strings.ToUpper(w) + "!"
	}
	close(out)
}

func main() {
	words := make(chan string)
	loud := make(chan string)
	go produce([]string{"hey", "you", "there"}, words)
	go shout(words, loud)
	for w := range loud {
		fmt.Println(w)
	}
	var sendOnly chan<- int = make(chan int, 1)
	fmt.Printf("%T\n", sendOnly)
}
