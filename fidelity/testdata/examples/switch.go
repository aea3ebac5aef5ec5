// Expression switches, switches without a tag, fallthrough and type
// switches.
package main

import (
	"fmt"
	"time"
)

func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "nil"
	case int, int64:
		return fmt.Sprintf("an integer: %v", x)
	case string:
		return "a string of length " + fmt.Sprint(len(x))
	case error:
		return "an error: " + x.Error()
	default:
		return fmt.Sprintf("something else: %T", x)
	}
}

func main() {
	for _, d := range []time.Weekday{time.Saturday, time.Tuesday} {
		switch d {
		case time.Saturday, time.Sunday:
			fmt.Println(d, "is a weekend day")
		default:
			fmt.Println(d, "is a work day")
		}
	}

	hour := 15
	switch {
	case hour < 12:
		fmt.Println("morning")
	case hour < 18:
		fmt.Println("afternoon")
	default:
		fmt.Println("evening")
	}

	switch n := 2; n {
	case 1:
		fmt.Println("one")
	case 2:
		fmt.Println("two")
		fallthrough
	case 3:
		fmt.Println("...and the case after two")
	}

	for _, v := range []any{nil, 5, int64(6), "hey", fmt.Errorf("oops"), 2.5} {
		fmt.Println(describe(v))
	}
}
