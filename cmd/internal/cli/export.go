package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"

	"github.com/goaccel/goaccel/notebook/export"
	"github.com/goaccel/goaccel/notebook/yaegirunner"
	"github.com/goaccel/goaccel/symbols"
)

// runExport writes a notebook's code cells as a Go module (goaccel export
// NOTEBOOK.ipynb [-o DIR] [--module PATH] [--no-build]) and builds it, so
// that what the notebook does not carry shows now, not on a cluster.
func runExport(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "the directory to write the module to (default: the notebook's name)")
	module := fs.String("module", "", "the module path of the program (default: the directory's name)")
	noBuild := fs.Bool("no-build", false, "do not build the program after writing it")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: goaccel export NOTEBOOK.ipynb [-o DIR] [--module PATH] [--no-build]")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return errors.New("export: name one notebook")
	}
	nb := pos[0]
	dir := *out
	if dir == "" {
		dir = strings.TrimSuffix(filepath.Base(nb), filepath.Ext(nb))
	}
	if *module == "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return err
		}
		*module = filepath.Base(abs)
	}
	cells, err := export.ReadNotebook(nb)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	pkgs := yaegirunner.NewPackages([]map[string]map[string]reflect.Value{symbols.Symbols})
	res, err := export.WriteModule(ctx, cells, dir, export.ModuleOptions{
		Module: *module, AutoImport: pkgs.AutoImport,
		Progress: func(s string) { fmt.Fprintln(stderr, "export:", s) },
	})
	if err != nil {
		return fmt.Errorf("%s: %w", nb, err)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(stderr, "goaccel export: %s: %s\n", nb, n)
	}
	if !*noBuild {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", os.DevNull, ".")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod")
		cmd.Stdout, cmd.Stderr = stderr, stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("the program exported to %s does not build (go build: %v): the notebook uses what a program cannot (above), or this is goaccel's bug", dir, err)
		}
	}
	fmt.Fprintf(stdout, "wrote %s (main.go, go.mod, go.sum): cd %s && go run .\n", dir, dir)
	return nil
}
