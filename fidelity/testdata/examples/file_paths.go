// Building and taking apart file paths with path/filepath.
package main

import (
	"fmt"
	"path/filepath"
	"strings"
)

func main() {
	p := filepath.Join("data", "raw", "..", "clean", "table.csv")
	fmt.Println(p)
	fmt.Println(filepath.Join("a//b", "/c/"))
	fmt.Println(filepath.Dir(p), filepath.Base(p))
	fmt.Println(filepath.IsAbs(p), filepath.IsAbs("/etc/hosts"))
	ext := filepath.Ext(p)
	fmt.Println(ext, strings.TrimSuffix(filepath.Base(p), ext))
	rel, err := filepath.Rel("a/b", "a/b/c/d")
	fmt.Println(rel, err)
	rel, err = filepath.Rel("a/b", "a/x/y")
	fmt.Println(rel, err)
	dir, file := filepath.Split("dir/file.txt")
	fmt.Println(filepath.Clean("/x/./y/../z/"), dir, file)
	ok, _ := filepath.Match("*.csv", "table.csv")
	fmt.Println(ok, filepath.SplitList("/bin:/usr/bin"))
}
