// Command kernel builds the goaccel binary (make build: bin/goaccel): the
// goaccel Jupyter kernel for Go, its kernelspec installer, node agent and
// launched workers. The command line is package cmd/internal/cli's.
package main

import (
	"os"

	"github.com/goaccel/goaccel/cmd/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) }
