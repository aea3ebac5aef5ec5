// State owned by a single goroutine, read and written through messages.
package main

import (
	"fmt"
	"sync"
)

type readOp struct {
	key  string
	resp chan int
}

type writeOp struct {
	key  string
	val  int
	resp chan bool
}

func main() {
	reads := make(chan readOp)
	writes := make(chan writeOp)

	go func() {
		state := map[string]int{}
		for {
			select {
			case r := <-reads:
				r.resp <- state[r.key]
			case w := <-writes:
				state[w.key] += w.val
				w.resp <- true
			}
		}
	}()

	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := writeOp{key: fmt.Sprint("k", i%3), val: i, resp: make(chan bool)}
			writes <- w
			<-w.resp
		}()
	}
	wg.Wait()

	for _, k := range []string{"k0", "k1", "k2"} {
		r := readOp{key: k, resp: make(chan int)}
		reads <- r
		fmt.Println(k, <-r.resp)
	}
}
