// range over a channel ends when the channel is closed and drained.
package main

import "fmt"

func main() {
	queue := make(chan string, 3)
	queue <- "one"
	queue <- "two"
	queue <- "three"
	close(queue)
	for item := range queue {
		fmt.Println(item)
	}

	evens := make(chan int)
	go func() {
		defer close(evens)
		for i := 0; i <= 8; i += 2 {
			evens <- i
		}
	}()
	sum := 0
	for e := range evens {
		sum += e
	}
	fmt.Println("sum of evens:", sum)
}
