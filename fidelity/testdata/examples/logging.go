// The log package: the standard logger with fixed flags and prefixes, and
// loggers writing to other writers.
package main

import (
	"bytes"
	"fmt"
	"log"
	"os"
)

func main() {
	log.SetFlags(0)
	log.Println("standard logger, no timestamp (to stderr)")

	log.SetPrefix("app: ")
	log.Printf("prefixed %d", 1)

	log.SetOutput(os.Stdout)
	log.SetFlags(log.Lmsgprefix)
	log.Println("now on stdout, prefix before the message")

	var buf bytes.Buffer
	custom := log.New(&buf, "buf: ", log.Lshortfile)
	custom.Println("hello")
	custom.SetPrefix("again: ")
	custom.Println("bye")
	fmt.Print("from the buffer:\n", buf.String())

	timed := log.New(os.Stdout, "", log.LstdFlags)
	timed.SetFlags(timed.Flags() &^ (log.Ldate | log.Ltime))
	timed.Print("flags cleared")
}
