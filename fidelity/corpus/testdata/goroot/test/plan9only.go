//go:build plan9

// run

package main

func main() {}
