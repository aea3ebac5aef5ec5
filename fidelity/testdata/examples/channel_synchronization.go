// Using a channel to wait until a goroutine has finished its work.
package main

import (
	"fmt"
	"time"
)

func download(name string, done chan<- bool) {
	fmt.Println("downloading", name)
	time.Sleep(10 * time.Millisecond)
	fmt.Println("finished", name)
	done <- true
}

func main() {
	done := make(chan bool, 1)
	go download("report.pdf", done)
	<-done
	fmt.Println("main saw the download finish")

	finished := make(chan struct{})
	go func() {
		defer close(finished)
		fmt.Println("cleanup in the background")
	}()
	<-finished
	fmt.Println("all done")
}
