// run

// Copyright notice of the test file.

package main

func main() {}
