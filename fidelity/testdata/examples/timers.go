// Timers fire once; they can be stopped before they fire, or reset.
package main

import (
	"fmt"
	"time"
)

func main() {
	start := time.Now()
	t1 := time.NewTimer(30 * time.Millisecond)
	<-t1.C
	fmt.Println("timer 1 fired, at least 30ms later:", time.Since(start) >= 30*time.Millisecond)

	t2 := time.NewTimer(time.Second)
	fired := make(chan bool, 1)
	go func() {
		<-t2.C
		fired <- true
	}()
	fmt.Println("timer 2 stopped:", t2.Stop())
	select {
	case <-fired:
		fmt.Println("timer 2 fired anyway")
	case <-time.After(100 * time.Millisecond):
		fmt.Println("timer 2 never fired")
	}

	t3 := time.NewTimer(time.Hour)
	t3.Reset(10 * time.Millisecond)
	<-t3.C
	fmt.Println("timer 3 fired after its reset")

	done := make(chan string)
	time.AfterFunc(10*time.Millisecond, func() { done <- "AfterFunc ran" })
	fmt.Println(<-done)
}
