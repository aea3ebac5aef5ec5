// log.Fatal prints its message and exits with status 1.
package main

import (
	"fmt"
	"log"
)

func main() {
	log.SetFlags(0)
	fmt.Println("checking the configuration")
	log.Fatalf("config: missing key %q", "listen")
}
