// Prints random numbers.
// fidelity: nondeterministic

package main

func main() {}
