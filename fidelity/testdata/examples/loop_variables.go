// Each loop iteration has its own variable (Go 1.22): closures that are
// deferred, started with go, or handed to library code each see their own.
package main

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

func main() {
	var mu sync.Mutex
	var seen []int
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mu.Lock()
			seen = append(seen, i)
			mu.Unlock()
		}()
	}
	wg.Wait()
	sort.Ints(seen)
	fmt.Println("goroutines saw", seen)

	func() {
		for _, s := range []string{"x", "y", "z"} {
			defer func() { fmt.Print(s, " ") }()
		}
	}()
	fmt.Println()

	results := make(chan int, 3)
	for i := range 3 {
		time.AfterFunc(time.Duration(i)*5*time.Millisecond, func() { results <- i * 100 })
	}
	var got []int
	for range 3 {
		got = append(got, <-results)
	}
	sort.Ints(got)
	fmt.Println("AfterFunc saw", got)

	var wg2 sync.WaitGroup
	var sum int64
	var mu2 sync.Mutex
	for n := range 5 {
		wg2.Go(func() {
			mu2.Lock()
			sum += int64(n)
			mu2.Unlock()
		})
	}
	wg2.Wait()
	fmt.Println("wg.Go sum", sum)
}
