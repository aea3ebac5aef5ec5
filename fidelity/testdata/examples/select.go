// select waits on several channel operations; the order results arrive in
// is fixed here by how long each goroutine sleeps.
package main

import (
	"fmt"
	"time"
)

func main() {
	fast := make(chan string)
	slow := make(chan string)
	go func() {
		time.Sleep(20 * time.Millisecond)
		fast <- "fast result"
	}()
	go func() {
		time.Sleep(300 * time.Millisecond)
		slow <- "slow result"
	}()
	for range 2 {
		select {
		case msg := <-fast:
			fmt.Println("got", msg)
		case msg := <-slow:
			fmt.Println("got", msg)
		}
	}

	var nilChan chan int // never ready
	ready := make(chan int, 1)
	ready <- 7
	select {
	case v := <-nilChan:
		fmt.Println("impossible", v)
	case v := <-ready:
		fmt.Println("ready with", v)
	}
}
