// Types declared in the program print as Go prints them: %v, %+v, %#v and
// %T of named structs, pointers, slices and maps of them, and reflection.
package main

import (
	"fmt"
	"reflect"
)

type point struct{ x, y int }

type labeled struct {
	Name string
	At   point
	Tags []string
}

type temperature float64

func main() {
	p := point{1, 2}
	fmt.Printf("%v %+v %#v %T\n", p, p, p, p)
	l := labeled{"origin", point{}, []string{"a"}}
	fmt.Printf("%v\n%+v\n%#v\n", l, l, l)
	fmt.Printf("%T %T %T\n", &p, []point{p}, map[string]point{})
	fmt.Println(reflect.TypeOf(l).Name(), reflect.TypeOf(l).NumField(), reflect.TypeOf(l).Field(2).Name)
	fmt.Println(reflect.TypeOf(p).String(), reflect.ValueOf(p).Field(1).Int())
	var t temperature = 21.5
	fmt.Printf("%v %T %#v\n", t, t, t)
	var e any = p
	_, isPoint := e.(point)
	fmt.Println(isPoint, e == any(point{1, 2}))
}
