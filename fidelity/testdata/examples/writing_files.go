// Writing files: WriteFile, Create with Write/WriteString, bufio.Writer,
// and appending.
package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
)

func check(err error) {
	if err != nil {
		panic(err)
	}
}

func main() {
	dir, err := os.MkdirTemp("", "writing")
	check(err)
	defer os.RemoveAll(dir)

	p1 := filepath.Join(dir, "one.txt")
	check(os.WriteFile(p1, []byte("first\n"), 0o600))

	p2 := filepath.Join(dir, "two.txt")
	f, err := os.Create(p2)
	check(err)
	n1, err := f.Write([]byte{'a', 'b', '\n'})
	check(err)
	n2, err := f.WriteString("writes\n")
	check(err)
	fmt.Println("wrote", n1, "and", n2, "bytes")

	w := bufio.NewWriter(f)
	n3, err := w.WriteString("buffered\n")
	check(err)
	fmt.Println("buffered", n3, "bytes; buffered now", w.Buffered())
	check(w.Flush())
	check(f.Sync())
	check(f.Close())

	a, err := os.OpenFile(p1, os.O_APPEND|os.O_WRONLY, 0)
	check(err)
	fmt.Fprintln(a, "appended")
	check(a.Close())

	for _, p := range []string{p1, p2} {
		data, err := os.ReadFile(p)
		check(err)
		info, err := os.Stat(p)
		check(err)
		fmt.Printf("%s (%d bytes, %v):\n%s", filepath.Base(p), info.Size(), info.Mode(), data)
	}
}
