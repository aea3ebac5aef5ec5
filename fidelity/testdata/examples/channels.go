// Unbuffered channels: a send waits for the matching receive.
package main

import "fmt"

func main() {
	pings := make(chan string)
	go func() { pings <- "ping" }()
	fmt.Println(<-pings)

	squares := make(chan int)
	go func() {
		for i := 1; i <= 4; i++ {
			squares <- i * i
		}
	}()
	for range 4 {
		fmt.Print(<-squares, " ")
	}
	fmt.Println()

	result := make(chan error)
	go func() { result <- fmt.Errorf("job %d failed", 3) }()
	fmt.Println(<-result)
}
