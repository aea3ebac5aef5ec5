// //go:embed puts files from the program's directory into the binary: as
// a string, as bytes and as a file system. The files are in
// embed_directive.files/, which the harness copies beside the program.
package main

import (
	"embed"
	"fmt"
	"io/fs"
)

//go:embed assets/greeting.txt
var greeting string

//go:embed assets/greeting.txt
var greetingBytes []byte

//go:embed assets/*.md
var docs embed.FS

func main() {
	fmt.Print(greeting)
	fmt.Println(len(greetingBytes))
	one, err := docs.ReadFile("assets/one.md")
	fmt.Printf("%q %v\n", one, err)
	names, _ := fs.Glob(docs, "assets/*")
	fmt.Println(names)
	_, err = docs.ReadFile("assets/greeting.txt")
	fmt.Println(err != nil)
}
