// A deterministic example.
package main

func main() {}
