// Atomic counters shared by many goroutines.
package main

import (
	"fmt"
	"sync"
	"sync/atomic"
)

func main() {
	var ops atomic.Uint64
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 500 {
				ops.Add(1)
			}
		}()
	}
	wg.Wait()
	fmt.Println("ops:", ops.Load())

	var flag atomic.Bool
	fmt.Println(flag.CompareAndSwap(false, true), flag.CompareAndSwap(false, true), flag.Load())

	var legacy int64
	atomic.AddInt64(&legacy, 41)
	atomic.AddInt64(&legacy, 1)
	fmt.Println(atomic.LoadInt64(&legacy))

	var cfg atomic.Pointer[string]
	v := "v2"
	cfg.Store(&v)
	fmt.Println(*cfg.Load())
}
