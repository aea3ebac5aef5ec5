// Struct embedding: promoted fields and methods, and satisfying interfaces
// through an embedded type.
package main

import "fmt"

type base struct {
	id int
}

func (b base) describe() string { return fmt.Sprintf("base with id %d", b.id) }

func (b *base) renumber(id int) { b.id = id }

type container struct {
	base
	label string
}

type describer interface{ describe() string }

func main() {
	c := container{base: base{id: 7}, label: "crate"}
	fmt.Printf("%+v\n", c)
	fmt.Println(c.id, c.base.id, c.label)
	fmt.Println(c.describe())
	c.renumber(8)
	fmt.Println(c.id)
	var d describer = c
	fmt.Println(d.describe())
}
