// Custom error types: a struct implementing error, errors.As, and wrapping
// with an Unwrap method.
package main

import (
	"errors"
	"fmt"
)

type validationError struct {
	field  string
	reason string
}

func (e *validationError) Error() string {
	return e.field + ": " + e.reason
}

type requestError struct {
	status int
	err    error
}

func (e requestError) Error() string { return fmt.Sprintf("request failed (%d): %v", e.status, e.err) }
func (e requestError) Unwrap() error { return e.err }

func validate(age int) error {
	if age < 0 {
		return &validationError{"age", "must not be negative"}
	}
	return nil
}

func handle(age int) error {
	if err := validate(age); err != nil {
		return requestError{status: 400, err: err}
	}
	return nil
}

func main() {
	err := handle(-3)
	fmt.Println(err)
	var ve *validationError
	if errors.As(err, &ve) {
		fmt.Println("field:", ve.field)
	}
	var re requestError
	if errors.As(err, &re) {
		fmt.Println("status:", re.status)
	}
	fmt.Println(handle(30) == nil)
	fmt.Printf("%T\n", errors.Unwrap(err))
}
