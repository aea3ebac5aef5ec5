// fmt's formatting verbs for structs, numbers, strings, pointers and
// widths.
package main

import (
	"fmt"
	"os"
)

type pair struct {
	left, right int
}

func main() {
	p := pair{1, 2}
	fmt.Printf("%v\n", p)
	fmt.Printf("%+v\n", p)
	fmt.Printf("%#v\n", p)
	fmt.Printf("%T\n", p)
	fmt.Printf("%t\n", false)
	fmt.Printf("%d %b %o %x %X %c %U\n", 200, 5, 8, 255, 255, 'G', 'G')
	fmt.Printf("%f %.2f %e %E %g\n", 3.14159, 3.14159, 123400000.0, 0.000012, 1e21)
	fmt.Printf("%s|%q|%x|% x\n", "hi", "hi\n", "hi", "hi")
	fmt.Printf("|%6d|%-6d|%06d|\n", 42, 42, 42)
	fmt.Printf("|%8.3f|%-8.3f|\n", 2.5, 2.5)
	fmt.Printf("|%8s|%-8s|\n", "go", "go")
	fmt.Printf("%v %v\n", []string{"a", "b"}, map[string]int{"z": 1, "a": 2})
	fmt.Printf("%5.1f%%\n", 99.5)
	fmt.Printf("%[2]d %[1]d\n", 1, 2)
	fmt.Printf("%d %s\n", "wrong", 5)
	s := fmt.Sprintf("a %s", "string")
	fmt.Println(s)
	fmt.Fprintf(os.Stderr, "an %s on stderr\n", "error")
	fmt.Println(fmt.Sprint("x", 1, 2, "y"), fmt.Sprintln("end"))
}
