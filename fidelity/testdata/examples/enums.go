// Enumerations with a named type, iota and a String method.
package main

import "fmt"

type phase int

const (
	idle phase = iota
	running
	paused
	stopped
)

var phaseNames = map[phase]string{
	idle:    "idle",
	running: "running",
	paused:  "paused",
	stopped: "stopped",
}

func (p phase) String() string {
	if n, ok := phaseNames[p]; ok {
		return n
	}
	return fmt.Sprintf("phase(%d)", int(p))
}

func next(p phase) phase {
	switch p {
	case idle:
		return running
	case running:
		return paused
	case paused:
		return running
	}
	return stopped
}

type size uint8

const (
	small size = 1 << iota
	medium
	large
)

func main() {
	p := idle
	for range 4 {
		fmt.Print(p, " -> ")
		p = next(p)
	}
	fmt.Println(p)
	fmt.Println(stopped, phase(9))
	fmt.Printf("%v %d\n", paused, paused)
	fmt.Println(small, medium, large, small|large)
}
