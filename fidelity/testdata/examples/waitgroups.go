// sync.WaitGroup waits for a set of goroutines, with Add/Done and with Go.
package main

import (
	"fmt"
	"sync"
)

func main() {
	var wg sync.WaitGroup
	sums := make([]int, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 1; k <= (i+1)*10; k++ {
				sums[i] += k
			}
		}()
	}
	wg.Wait()
	fmt.Println(sums)

	var mu sync.Mutex
	seen := map[int]bool{}
	var wg2 sync.WaitGroup
	for i := range 5 {
		wg2.Go(func() {
			mu.Lock()
			seen[i] = true
			mu.Unlock()
		})
	}
	wg2.Wait()
	fmt.Println(len(seen), seen[0], seen[4])
}
