// The flag package: the program's own (empty) command line, and a FlagSet
// parsing an explicit argument list.
package main

import (
	"flag"
	"fmt"
	"time"
)

func main() {
	verbose := flag.Bool("verbose", false, "talk more")
	flag.Parse()
	fmt.Println("verbose:", *verbose, "rest:", flag.Args())

	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	port := fs.Int("port", 8080, "port to listen on")
	name := fs.String("name", "anon", "server name")
	wait := fs.Duration("wait", time.Second, "grace period")
	var tls bool
	fs.BoolVar(&tls, "tls", false, "use TLS")
	err := fs.Parse([]string{"-port=9000", "-tls", "--name", "alpha", "-wait", "2m", "extra", "args"})
	fmt.Println(*port, *name, *wait, tls, fs.Args(), err)
	fmt.Println(fs.NArg(), fs.NFlag())
}
