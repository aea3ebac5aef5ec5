// Starting goroutines with functions, closures and methods, and waiting
// for them; results are collected so the output is deterministic.
package main

import (
	"fmt"
	"sort"
	"sync"
)

type collector struct {
	mu    sync.Mutex
	lines []string
}

func (c *collector) add(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines = append(c.lines, fmt.Sprintf(format, args...))
}

func count(c *collector, name string, n int, wg *sync.WaitGroup) {
	defer wg.Done()
	for i := range n {
		c.add("%s %d", name, i)
	}
}

func main() {
	var c collector
	var wg sync.WaitGroup
	wg.Add(2)
	go count(&c, "worker", 3, &wg)
	go func(msg string) {
		defer wg.Done()
		c.add("closure says %s", msg)
	}("hello")
	wg.Add(1)
	count(&c, "main", 2, &wg) // a plain call, on this goroutine
	wg.Wait()
	sort.Strings(c.lines)
	for _, l := range c.lines {
		fmt.Println(l)
	}
}
