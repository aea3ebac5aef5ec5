// Subcommands, each with its own FlagSet, dispatched on the first
// argument; the argument lists are given explicitly.
package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("expected a subcommand")
	}
	switch args[0] {
	case "add":
		fs := flag.NewFlagSet("add", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		qty := fs.Int("qty", 1, "quantity")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		fmt.Printf("add %d of %s\n", *qty, strings.Join(fs.Args(), ", "))
	case "remove":
		fs := flag.NewFlagSet("remove", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		all := fs.Bool("all", false, "remove everything")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		fmt.Println("remove all:", *all, "items:", fs.Args())
	default:
		return fmt.Errorf("unknown subcommand %q", args[0])
	}
	return nil
}

func main() {
	for _, cmd := range [][]string{
		{"add", "-qty", "3", "bolts", "nuts"},
		{"remove", "-all"},
		{"remove", "-force"},
		{"list"},
		{},
	} {
		if err := run(cmd); err != nil {
			fmt.Println("error:", err)
		}
	}
}
