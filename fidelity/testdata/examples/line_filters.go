// A line filter: read lines with bufio.Scanner, transform them, write them
// out. The input is a reader made in the program (a notebook has no stdin
// to pipe into).
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
)

func filter(in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		n++
		fmt.Fprintf(out, "%2d %s\n", n, strings.ToUpper(line))
	}
	return sc.Err()
}

func main() {
	input := "alpha\n# a comment\nbeta gamma\n\ndelta"
	if err := filter(strings.NewReader(input), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}

	words := bufio.NewScanner(strings.NewReader("count  these\nfive words\n please"))
	words.Split(bufio.ScanWords)
	count := 0
	for words.Scan() {
		count++
	}
	fmt.Println("words:", count)
}
