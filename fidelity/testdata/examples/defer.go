// defer runs calls when the function returns, last deferred first;
// arguments are evaluated at the defer statement.
package main

import (
	"fmt"
	"os"
	"path/filepath"
)

func trace(name string) func() {
	fmt.Println("enter", name)
	return func() { fmt.Println("leave", name) }
}

func double() (result int) {
	defer func() { result *= 2 }()
	return 21
}

func main() {
	defer trace("main")()
	for i := range 3 {
		defer fmt.Println("deferred", i)
	}
	fmt.Println("double:", double())

	dir, err := os.MkdirTemp("", "defer-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	f, err := os.Create(filepath.Join(dir, "notes.txt"))
	if err != nil {
		panic(err)
	}
	defer func() {
		fmt.Println("closing file:", f.Close())
	}()
	fmt.Fprintln(f, "data")
	fmt.Println("wrote the file")
}
