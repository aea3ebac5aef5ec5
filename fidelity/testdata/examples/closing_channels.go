// Closing a channel tells receivers no more values will come.
package main

import "fmt"

func main() {
	jobs := make(chan int, 5)
	done := make(chan []int)

	go func() {
		var got []int
		for {
			j, more := <-jobs
			if !more {
				done <- got
				return
			}
			got = append(got, j*10)
		}
	}()

	for j := 1; j <= 3; j++ {
		jobs <- j
	}
	close(jobs)
	fmt.Println("sent 3 jobs and closed the channel")
	fmt.Println("the worker saw", <-done)

	v, ok := <-jobs
	fmt.Println("after close:", v, ok)
}
