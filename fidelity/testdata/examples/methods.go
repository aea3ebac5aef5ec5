// Methods on value and pointer receivers, and method values.
package main

import "fmt"

type rect struct {
	w, h float64
}

func (r rect) area() float64 { return r.w * r.h }

func (r *rect) scale(f float64) {
	r.w *= f
	r.h *= f
}

type celsius float64

func (c celsius) fahrenheit() float64 { return float64(c)*9/5 + 32 }

func main() {
	r := rect{w: 2, h: 3}
	fmt.Println(r.area())
	r.scale(2)
	fmt.Println(r, r.area())

	rp := &r
	fmt.Println(rp.area())
	rp.scale(0.5)
	fmt.Println(r)

	f := r.area
	r.w = 100
	fmt.Println(f(), r.area())

	g := (*rect).scale
	g(&r, 3)
	fmt.Println(r)

	fmt.Println(celsius(100).fahrenheit())
}
