package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/goaccel/goaccel/notebook/build"
)

// prebuild builds the packages cells import for plugins ahead of the first
// cell (goaccel prebuild [PKG...]); install runs it too unless told not to.
func prebuild(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("prebuild", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quiet := fs.Bool("quiet", false, "print nothing but errors")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runPrebuild(ctx, stdout, *quiet, fs.Args()...)
}

func runPrebuild(ctx context.Context, stdout io.Writer, quiet bool, pkgs ...string) error {
	progress := func(s string) {
		if !quiet {
			fmt.Fprintln(stdout, "prebuild:", s)
		}
	}
	err := build.Prebuild(ctx, build.Options{}, progress, pkgs...)
	var un *build.Unavailable
	if errors.As(err, &un) {
		// Cells will be interpreted here: nothing to build ahead.
		fmt.Fprintf(stdout, "prebuild: skipped: %v\n", err)
		return nil
	}
	return err
}
