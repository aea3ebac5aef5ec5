// Creating, listing and walking directories.
package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

func check(err error) {
	if err != nil {
		panic(err)
	}
}

func main() {
	root, err := os.MkdirTemp("", "dirs")
	check(err)
	defer os.RemoveAll(root)

	check(os.Mkdir(filepath.Join(root, "sub"), 0o755))
	check(os.MkdirAll(filepath.Join(root, "sub", "deep", "er"), 0o755))
	for _, name := range []string{"sub/a.txt", "sub/deep/b.txt", "top.txt"} {
		check(os.WriteFile(filepath.Join(root, name), []byte(name), 0o644))
	}

	entries, err := os.ReadDir(filepath.Join(root, "sub"))
	check(err)
	for _, e := range entries {
		fmt.Println("entry:", e.Name(), e.IsDir())
	}

	check(os.Chdir(filepath.Join(root, "sub", "deep")))
	here, err := os.ReadDir(".")
	check(err)
	fmt.Println("in deep:", len(here), "entries")

	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		fmt.Println("visit:", filepath.ToSlash(rel), d.IsDir())
		return nil
	})
	check(err)

	matches, err := fs.Glob(os.DirFS(root), "*/*.txt")
	check(err)
	fmt.Println(matches)
}
