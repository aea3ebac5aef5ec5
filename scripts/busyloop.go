//go:build ignore

// busyloop keeps every CPU busy until it is stopped (or its parent, the
// flake script, is gone): the load under which scripts/flake.sh runs the
// timing-sensitive tests, as a busy CI machine would.
//
//	go build -o busyloop scripts/busyloop.go && ./busyloop
package main

import (
	"os"
	"runtime"
	"time"
)

var sink uint64

func main() {
	parent := os.Getppid()
	for range runtime.NumCPU() {
		go func() {
			x := uint64(1)
			for {
				for i := 0; i < 1<<20; i++ {
					x = x*6364136223846793005 + 1442695040888963407
				}
				sink = x
			}
		}()
	}
	for os.Getppid() == parent {
		time.Sleep(time.Second)
	}
}
