// The strings package's everyday functions.
package main

import (
	"fmt"
	"strings"
)

func main() {
	s := "  The quick brown fox  "
	t := strings.TrimSpace(s)
	fmt.Printf("%q\n", t)
	fmt.Println(strings.Contains(t, "quick"), strings.HasPrefix(t, "The"), strings.HasSuffix(t, "dog"))
	fmt.Println(strings.Count("cheese", "e"), strings.Index("chicken", "ken"), strings.LastIndex("go gopher", "go"))
	fmt.Println(strings.Fields(t), len(strings.Split("a,b,,c", ",")))
	fmt.Println(strings.Join([]string{"x", "y", "z"}, "/"))
	fmt.Println(strings.Repeat("ab", 3), strings.Replace("oink oink oink", "k", "ky", 2), strings.ReplaceAll("a-b-c", "-", "+"))
	fmt.Println(strings.ToUpper(t), strings.ToLower("MiXeD"), strings.Title("go"))
	before, after, found := strings.Cut("key=value", "=")
	fmt.Println(before, after, found)
	fmt.Println(strings.EqualFold("Go", "GO"), strings.TrimLeft("xxhixx", "x"), strings.TrimSuffix("file.go", ".go"))
	fmt.Println(strings.Map(func(r rune) rune {
		if r == 'a' {
			return 'A'
		}
		return r
	}, "banana"))
	var b strings.Builder
	for i := range 3 {
		fmt.Fprintf(&b, "[%d]", i)
	}
	fmt.Println(b.String(), b.Len())
	r := strings.NewReplacer("<", "&lt;", ">", "&gt;")
	fmt.Println(r.Replace("<b>bold</b>"))
}
