// Rate limiting with a ticker, and bursts with a buffered channel of
// tokens. The time between requests is printed as multiples of the
// interval, rounded: scheduling jitter on a busy machine can change them.
// fidelity: nondeterministic
package main

import (
	"fmt"
	"time"
)

func main() {
	const interval = 40 * time.Millisecond
	limiter := time.NewTicker(interval)
	defer limiter.Stop()
	start := time.Now()
	for req := 1; req <= 3; req++ {
		<-limiter.C
		fmt.Printf("request %d after ~%d intervals\n", req, time.Since(start).Round(interval)/interval)
	}

	tokens := make(chan struct{}, 3)
	for range 3 {
		tokens <- struct{}{}
	}
	go func() {
		refill := time.NewTicker(interval)
		defer refill.Stop()
		for range refill.C {
			select {
			case tokens <- struct{}{}:
			default:
			}
		}
	}()
	start = time.Now()
	for req := 1; req <= 5; req++ {
		<-tokens
		waited := time.Since(start) >= interval/2
		fmt.Printf("burst request %d waited: %v\n", req, waited)
	}
}
