// The regexp package: matching, finding, submatches and replacing.
package main

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

func main() {
	ok, _ := regexp.MatchString(`^[a-z]+\d{2}$`, "abc42")
	fmt.Println(ok)

	re := regexp.MustCompile(`(\w+)@(\w+)\.com`)
	text := "write to ann@example.com or bo@test.com today"
	fmt.Println(re.MatchString(text))
	fmt.Println(re.FindString(text))
	fmt.Println(re.FindStringIndex(text))
	fmt.Println(re.FindStringSubmatch(text))
	fmt.Println(re.FindAllString(text, -1))
	fmt.Println(re.FindAllStringSubmatchIndex(text, -1))
	fmt.Println(re.ReplaceAllString(text, "<$1 at $2>"))
	fmt.Println(re.ReplaceAllStringFunc(text, strings.ToUpper))
	fmt.Println(re.Match([]byte("x@y.com")))
	fmt.Println(string(re.ReplaceAllFunc([]byte("q@w.com"), bytes.ToUpper)))

	named := regexp.MustCompile(`(?P<year>\d{4})-(?P<month>\d{2})`)
	m := named.FindStringSubmatch("due 2024-07")
	fmt.Println(m[named.SubexpIndex("month")], named.SubexpNames())
	fmt.Println(re)

	_, err := regexp.Compile(`a(b`)
	fmt.Println(err)
}
