//go:build unix && !wasip1

// run

package main

func main() {}
