// Structs: literals, field access, pointers to structs, anonymous structs,
// comparison and printing.
package main

import "fmt"

type book struct {
	title  string
	author string
	pages  int
}

func newBook(title, author string) *book {
	b := book{title: title, author: author}
	b.pages = 100
	return &b
}

func main() {
	fmt.Println(book{"Dune", "Herbert", 412})
	fmt.Println(book{title: "Emma"})
	b := newBook("Ulysses", "Joyce")
	b.pages += 632
	fmt.Println(*b, b.pages)
	fmt.Printf("%+v\n", *b)
	fmt.Printf("%v %T\n", b.title, *b)

	c := *b
	c.title = "Copy"
	fmt.Println(b.title, c.title, c == *b)

	point := struct {
		x, y int
	}{3, 4}
	fmt.Println(point, point.x*point.y)
	fmt.Printf("%#v\n", point)
}
