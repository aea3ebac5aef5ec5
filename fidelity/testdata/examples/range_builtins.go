// range over slices, arrays, strings, maps, integers and channels.
package main

import (
	"fmt"
	"slices"
)

func main() {
	total := 0
	for _, v := range []int{3, 4, 5} {
		total += v
	}
	fmt.Println("sum:", total)

	for i, v := range [3]string{"x", "y", "z"} {
		fmt.Print(i, "=", v, " ")
	}
	fmt.Println()

	ages := map[string]int{"zed": 40, "amy": 31, "bo": 8}
	var names []string
	for name := range ages {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		fmt.Println(name, ages[name])
	}

	for i, r := range "añb" {
		fmt.Println(i, string(r))
	}

	for i := range 3 {
		fmt.Print(i)
	}
	fmt.Println()

	ch := make(chan string, 2)
	ch <- "first"
	ch <- "second"
	close(ch)
	for msg := range ch {
		fmt.Println(msg)
	}
}
