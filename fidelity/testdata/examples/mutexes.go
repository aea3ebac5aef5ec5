// A mutex guarding a map updated from many goroutines.
package main

import (
	"fmt"
	"sync"
)

type tally struct {
	mu     sync.Mutex
	counts map[string]int
}

func (t *tally) inc(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.counts[name]++
}

type cache struct {
	mu   sync.RWMutex
	data map[string]string
}

func (c *cache) get(k string) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	v, ok := c.data[k]
	return v, ok
}

func main() {
	t := tally{counts: map[string]int{}}
	var wg sync.WaitGroup
	for _, name := range []string{"a", "a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				t.inc(name)
			}
		}()
	}
	wg.Wait()
	fmt.Println(t.counts)

	c := cache{data: map[string]string{"k": "v"}}
	fmt.Println(c.get("k"))
	fmt.Println(c.get("missing"))
}
