// Timeouts with select and time.After.
package main

import (
	"fmt"
	"time"
)

func lookup(delay time.Duration) <-chan string {
	ch := make(chan string, 1)
	go func() {
		time.Sleep(delay)
		ch <- fmt.Sprintf("answer after %v", delay)
	}()
	return ch
}

func main() {
	select {
	case res := <-lookup(2 * time.Second):
		fmt.Println(res)
	case <-time.After(50 * time.Millisecond):
		fmt.Println("timeout waiting for the slow lookup")
	}

	select {
	case res := <-lookup(10 * time.Millisecond):
		fmt.Println(res)
	case <-time.After(2 * time.Second):
		fmt.Println("timeout waiting for the quick lookup")
	}
}
