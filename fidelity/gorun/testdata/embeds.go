package main

import (
	_ "embed"
	"fmt"
	"os"
)

//go:embed data/msg.txt
var msg string

func main() {
	onDisk, err := os.ReadFile("data/msg.txt")
	fmt.Print(msg, string(onDisk), err, "\n")
}
