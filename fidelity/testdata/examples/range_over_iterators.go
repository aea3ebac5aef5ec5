// Range over functions: iter.Seq and iter.Seq2 iterators, early exit, and
// iter.Pull.
package main

import (
	"fmt"
	"iter"
	"maps"
	"slices"
)

type list[T any] struct {
	head *elem[T]
}

type elem[T any] struct {
	val  T
	next *elem[T]
}

func (l *list[T]) push(v T) { l.head = &elem[T]{v, l.head} }

func (l *list[T]) all() iter.Seq[T] {
	return func(yield func(T) bool) {
		for e := l.head; e != nil; e = e.next {
			if !yield(e.val) {
				return
			}
		}
	}
}

func fibonacci() iter.Seq2[int, int] {
	return func(yield func(int, int) bool) {
		a, b := 0, 1
		for i := 0; ; i++ {
			if !yield(i, a) {
				return
			}
			a, b = b, a+b
		}
	}
}

func main() {
	var l list[string]
	for _, s := range []string{"c", "b", "a"} {
		l.push(s)
	}
	for v := range l.all() {
		fmt.Print(v, " ")
	}
	fmt.Println()
	fmt.Println(slices.Collect(l.all()))

	for i, f := range fibonacci() {
		if f > 50 {
			break
		}
		fmt.Print(i, ":", f, " ")
	}
	fmt.Println()

	next, stop := iter.Pull(l.all())
	defer stop()
	first, ok := next()
	fmt.Println("pulled", first, ok)

	m := map[string]int{"b": 2, "a": 1}
	fmt.Println(slices.Sorted(maps.Keys(m)))
}
