// Temporary files and directories that the program removes itself.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func check(err error) {
	if err != nil {
		panic(err)
	}
}

func main() {
	f, err := os.CreateTemp("", "scratch-*.dat")
	check(err)
	defer os.Remove(f.Name())
	base := filepath.Base(f.Name())
	fmt.Println(strings.HasPrefix(base, "scratch-"), strings.HasSuffix(base, ".dat"))
	_, err = f.Write([]byte{1, 2, 3, 4})
	check(err)
	check(f.Close())
	info, err := os.Stat(f.Name())
	check(err)
	fmt.Println("size:", info.Size())

	dir, err := os.MkdirTemp("", "scratchdir")
	check(err)
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "inside.txt")
	check(os.WriteFile(path, []byte("temp"), 0o600))
	fmt.Println(filepath.Dir(path) == dir, strings.HasPrefix(dir, os.TempDir()))
}
