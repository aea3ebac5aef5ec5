// run -gcflags=-N

package main

func main() {}
