// runoutput

package main

func main() {}
