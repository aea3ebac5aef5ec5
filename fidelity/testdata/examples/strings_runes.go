// Strings are read-only byte slices holding UTF-8; runes are code points.
package main

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

func main() {
	const word = "grüße, 世界"
	fmt.Println("bytes:", len(word), "runes:", utf8.RuneCountInString(word))

	for i := 0; i < 5; i++ {
		fmt.Printf("%x ", word[i])
	}
	fmt.Println()

	for idx, r := range word {
		fmt.Printf("%U %q at %d\n", r, r, idx)
	}

	for i, w := 0, 0; i < len(word); i += w {
		r, width := utf8.DecodeRuneInString(word[i:])
		w = width
		if unicode.IsLetter(r) && r > unicode.MaxASCII {
			fmt.Printf("non-ASCII letter %c (%d bytes)\n", r, width)
		}
	}

	rs := []rune(word)
	fmt.Println(string(rs[7:]), string(rs[0]), len(rs))
	b := []byte("abc")
	b[0] = 'A'
	fmt.Println(string(b))
}
