// Reading files: all at once, in chunks with Seek, and with bufio.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

func check(err error) {
	if err != nil {
		panic(err)
	}
}

func main() {
	dir, err := os.MkdirTemp("", "reading")
	check(err)
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "poem.txt")
	check(os.WriteFile(path, []byte("roses are red\nviolets are blue\n"), 0o644))

	data, err := os.ReadFile(path)
	check(err)
	fmt.Print(string(data))

	f, err := os.Open(path)
	check(err)
	defer f.Close()

	buf := make([]byte, 5)
	n, err := f.Read(buf)
	check(err)
	fmt.Printf("%d bytes: %q\n", n, buf[:n])

	off, err := f.Seek(14, io.SeekStart)
	check(err)
	n, err = f.Read(buf)
	check(err)
	fmt.Printf("at %d: %q\n", off, buf[:n])

	_, err = f.Seek(-5, io.SeekEnd)
	check(err)
	rest, err := io.ReadAll(f)
	check(err)
	fmt.Printf("last bytes: %q\n", rest)

	_, err = f.Seek(0, io.SeekStart)
	check(err)
	r := bufio.NewReader(f)
	peek, err := r.Peek(4)
	check(err)
	fmt.Printf("peek: %q\n", peek)
	line, err := r.ReadString('\n')
	fmt.Printf("line: %q %v\n", line, err)

	_, err = os.ReadFile(filepath.Join(dir, "missing.txt"))
	fmt.Println(os.IsNotExist(err))
}
