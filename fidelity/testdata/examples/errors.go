// Errors as values: errors.New, fmt.Errorf with %w, sentinel errors,
// errors.Is and errors.Join.
package main

import (
	"errors"
	"fmt"
	"strconv"
)

var errOutOfStock = errors.New("out of stock")
var errUnknownItem = errors.New("unknown item")

var inventory = map[string]int{"lamp": 2, "desk": 0}

func reserve(item string) error {
	n, ok := inventory[item]
	if !ok {
		return fmt.Errorf("reserving %q: %w", item, errUnknownItem)
	}
	if n == 0 {
		return fmt.Errorf("reserving %q: %w", item, errOutOfStock)
	}
	inventory[item]--
	return nil
}

func main() {
	for _, item := range []string{"lamp", "desk", "sofa"} {
		err := reserve(item)
		switch {
		case err == nil:
			fmt.Println(item, "reserved")
		case errors.Is(err, errOutOfStock):
			fmt.Println("try later:", err)
		default:
			fmt.Println("failed:", err)
		}
	}
	_, err := strconv.Atoi("12a")
	fmt.Println(err)
	var numErr *strconv.NumError
	fmt.Println(errors.As(err, &numErr), numErr.Func)

	both := errors.Join(errOutOfStock, errUnknownItem)
	fmt.Println(both)
	fmt.Println(errors.Is(both, errUnknownItem))
	fmt.Println(errors.Unwrap(fmt.Errorf("outer: %w", errOutOfStock)) == errOutOfStock)
}
