// Buffered channels accept sends without a receiver up to their capacity.
package main

import "fmt"

func main() {
	queue := make(chan string, 3)
	queue <- "alpha"
	queue <- "beta"
	fmt.Println(len(queue), cap(queue))
	queue <- "gamma"
	fmt.Println(<-queue, <-queue)
	queue <- "delta"
	fmt.Println(<-queue, <-queue, len(queue))
}
