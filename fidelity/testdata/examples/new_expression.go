// Go 1.26's new with an expression allocates a variable holding its value.
package main

import "fmt"

type config struct {
	Retries *int
	Name    *string
}

func main() {
	p := new(42)
	fmt.Println(*p)
	*p++
	fmt.Println(*p)
	c := config{Retries: new(3), Name: new("primary")}
	fmt.Println(*c.Retries, *c.Name)
	q := new(int)
	fmt.Println(*q)
}
