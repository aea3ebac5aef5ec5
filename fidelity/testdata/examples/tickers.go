// Tickers fire repeatedly until stopped.
package main

import (
	"fmt"
	"time"
)

func main() {
	ticker := time.NewTicker(15 * time.Millisecond)
	defer ticker.Stop()
	start := time.Now()
	ticks := 0
	for range ticker.C {
		ticks++
		fmt.Println("tick", ticks)
		if ticks == 4 {
			break
		}
	}
	ticker.Stop()
	fmt.Println("four ticks took at least 60ms:", time.Since(start) >= 60*time.Millisecond)

	select {
	case <-ticker.C:
		fmt.Println("a tick after Stop")
	case <-time.After(50 * time.Millisecond):
		fmt.Println("no ticks after Stop")
	}
}
