// recover stops a panic inside a deferred function and turns it into a
// value.
package main

import (
	"errors"
	"fmt"
)

func safeDivide(a, b int) (q int, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("recovered: %v", r)
		}
	}()
	return a / b, nil
}

func mayPanic(kind int) {
	switch kind {
	case 1:
		panic("a string")
	case 2:
		panic(errors.New("an error value"))
	case 3:
		var m map[int]int
		m[0] = 1
	}
}

func try(kind int) (msg string) {
	defer func() {
		r := recover()
		if err, ok := r.(error); ok {
			msg = "error: " + err.Error()
			return
		}
		msg = fmt.Sprint("value: ", r)
	}()
	mayPanic(kind)
	return "no panic"
}

func main() {
	fmt.Println(safeDivide(10, 2))
	fmt.Println(safeDivide(1, 0))
	for k := range 4 {
		fmt.Println(k, try(k))
	}
	fmt.Println(recover())
}
