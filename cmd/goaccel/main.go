// Command goaccel is the goaccel binary under its own name for `go install`
// (which names a binary after its directory): the same program as
// cmd/kernel, whose command line is package cmd/internal/cli's.
//
//	go install -ldflags='-checklinkname=0 -extldflags=-Wl,-z,lazy' github.com/goaccel/goaccel/cmd/goaccel@latest
//	goaccel install
package main

import (
	"os"

	"github.com/goaccel/goaccel/cmd/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) }
