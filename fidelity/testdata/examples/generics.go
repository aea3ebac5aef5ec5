// Generic functions and types with type parameters and constraints.
package main

import (
	"cmp"
	"fmt"
	"strings"
)

func Map[T, U any](xs []T, f func(T) U) []U {
	out := make([]U, 0, len(xs))
	for _, x := range xs {
		out = append(out, f(x))
	}
	return out
}

type Number interface {
	~int | ~int64 | ~float64
}

func Sum[N Number](xs ...N) N {
	var s N
	for _, x := range xs {
		s += x
	}
	return s
}

func Largest[T cmp.Ordered](xs []T) T {
	best := xs[0]
	for _, x := range xs[1:] {
		if x > best {
			best = x
		}
	}
	return best
}

type Stack[T any] struct {
	items []T
}

func (s *Stack[T]) Push(v T) { s.items = append(s.items, v) }

func (s *Stack[T]) Pop() (T, bool) {
	var zero T
	if len(s.items) == 0 {
		return zero, false
	}
	v := s.items[len(s.items)-1]
	s.items = s.items[:len(s.items)-1]
	return v, true
}

type meters float64

func main() {
	fmt.Println(Map([]string{"go", "cell"}, strings.ToUpper))
	fmt.Println(Map([]int{1, 2, 3}, func(i int) string { return strings.Repeat("*", i) }))
	fmt.Println(Sum(1, 2, 3), Sum(1.5, 2.5), Sum[meters](1.25, 2))
	fmt.Println(Largest([]string{"pear", "apple", "quince"}), Largest([]int{3, 9, 2}))

	var s Stack[string]
	s.Push("a")
	s.Push("b")
	v, ok := s.Pop()
	fmt.Println(v, ok)
	s.Pop()
	v, ok = s.Pop()
	fmt.Printf("%q %v\n", v, ok)
}
