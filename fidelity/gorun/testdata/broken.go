package main

func main() { undefinedName() }
