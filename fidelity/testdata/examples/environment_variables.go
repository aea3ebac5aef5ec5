// Setting, reading and unsetting environment variables.
package main

import (
	"fmt"
	"os"
	"strings"
)

func main() {
	os.Setenv("FIDELITY_EXAMPLE_COLOR", "teal")
	fmt.Println("color:", os.Getenv("FIDELITY_EXAMPLE_COLOR"))
	fmt.Println("unset:", os.Getenv("FIDELITY_EXAMPLE_NOT_SET") == "")
	_, ok := os.LookupEnv("FIDELITY_EXAMPLE_NOT_SET")
	fmt.Println("looked up:", ok)

	found := false
	for _, kv := range os.Environ() {
		if k, v, _ := strings.Cut(kv, "="); k == "FIDELITY_EXAMPLE_COLOR" {
			found = v == "teal"
		}
	}
	fmt.Println("in Environ:", found)
	fmt.Println(os.ExpandEnv("a ${FIDELITY_EXAMPLE_COLOR} sky"))
	os.Unsetenv("FIDELITY_EXAMPLE_COLOR")
	_, ok = os.LookupEnv("FIDELITY_EXAMPLE_COLOR")
	fmt.Println("after unset:", ok)
}
