// Parsing numbers from strings with strconv.
package main

import (
	"fmt"
	"strconv"
)

func main() {
	f, _ := strconv.ParseFloat("1.234", 64)
	fmt.Println(f)
	i, _ := strconv.ParseInt("-123", 0, 64)
	fmt.Println(i)
	h, _ := strconv.ParseInt("0x1c8", 0, 64)
	fmt.Println(h)
	u, _ := strconv.ParseUint("789", 0, 64)
	fmt.Println(u)
	b, _ := strconv.ParseInt("1011", 2, 8)
	fmt.Println(b)
	k, _ := strconv.Atoi("135")
	fmt.Println(k)
	ok, _ := strconv.ParseBool("true")
	fmt.Println(ok)

	_, err := strconv.Atoi("wat")
	fmt.Println(err)
	_, err = strconv.ParseInt("300", 10, 8)
	fmt.Println(err)

	fmt.Println(strconv.Itoa(99)+"!", strconv.FormatInt(255, 16), strconv.FormatFloat(1.0/3, 'f', 4, 64))
	fmt.Println(strconv.Quote("tab\there"), strconv.QuoteRune('☺'))
	s, err := strconv.Unquote(`"a\nb"`)
	fmt.Printf("%q %v\n", s, err)
	var n int
	var word string
	fmt.Sscanf("7 apples", "%d %s", &n, &word)
	fmt.Println(n, word)
}
