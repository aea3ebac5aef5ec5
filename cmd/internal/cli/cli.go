// Package cli is the goaccel binary's command line (cmd/kernel, and
// cmd/goaccel for `go install`): it installs the kernelspec, runs as a
// kernel when Jupyter starts it, runs as a node agent (`goaccel node`) that
// takes launches from a notebook on another machine, launches a Go program
// on worker processes as accelerate launch does (`goaccel launch`), writes a
// notebook as a Go program (`goaccel export`), and
// (hidden) runs as a launched training worker. It only parses the command line; the work is
// done by packages kernelspec, kernel and notebook.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/goaccel/goaccel/kernelspec"
)

// version is set at build time with -ldflags "-X
// github.com/goaccel/goaccel/cmd/internal/cli.version=..."; otherwise it is
// the module's version (go install ...@version) or "dev".
var version = "dev"

// Main runs the command line args (without the program's name) and
// returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int { return run(args, stdout, stderr) }

const usage = `goaccel — a Jupyter kernel for Go with Accelerate's notebook workflow

Usage:
  goaccel install [--user | --sys-prefix | --prefix DIR] [--name N] [--display-name D] [--env K=V]... [--no-prebuild]
  goaccel uninstall [--user | --sys-prefix | --prefix DIR] [--name N]
  goaccel prebuild [--quiet] [PACKAGE...]
  goaccel kernel -f CONNECTION_FILE
  goaccel node --rdzv-endpoint HOST:PORT [--rdzv-backend etcd|static|c10d] [--rdzv-id ID]
               [--node-rank R] [--nproc-per-node P] [--rdzv-conf KEY=VALUE]... [--host ADDR]
  goaccel launch [--num_processes N] [--cpu] [--mixed_precision MODE] [--num_machines M --machine_rank R
               --main_process_ip ADDR --main_process_port PORT] [--rdzv_backend B] [--max_restarts K]
               [--use_fsdp --fsdp_sharding_strategy S --fsdp_state_dict_type T ...]
               [--config_file FILE] PROGRAM [ARGS...]
  goaccel config [--config_file FILE] [--num_processes N] [--cpu] [--mixed_precision MODE] ...
  goaccel env [--config_file FILE]
  goaccel export NOTEBOOK.ipynb [-o DIR] [--module PATH] [--no-build]
  goaccel merge-weights CHECKPOINT OUTPUT [--remove_checkpoint_dir]
  goaccel version
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "install":
		err = install(args[1:], stdout, stderr)
	case "uninstall":
		err = uninstall(args[1:], stdout, stderr)
	case "prebuild":
		err = prebuild(args[1:], stdout, stderr)
	case "kernel":
		err = runKernel(args[1:], stderr)
	case "node":
		err = runNode(args[1:], stderr)
	case "launch":
		err = runLaunch(args[1:], stdout, stderr)
	case "config":
		err = runConfig(args[1:], stdout, stderr)
	case "env":
		err = runEnv(args[1:], stdout, stderr)
	case "export":
		err = runExport(args[1:], stdout, stderr)
	case "merge-weights":
		err = runMergeWeights(args[1:], stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "goaccel", versionString())
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	default:
		if code, ok := runHidden(args, stderr); ok {
			return code
		}
		fmt.Fprintf(stderr, "goaccel: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "goaccel %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

func versionString() string {
	if version != "dev" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return version
}

// multiFlag collects a repeated flag such as --env.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// scopeFlags parses the flags install and uninstall share.
type scopeFlags struct {
	user, sysPrefix bool
	prefix, name    string
}

func (s *scopeFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&s.user, "user", false, "install for the current user (default)")
	fs.BoolVar(&s.sysPrefix, "sys-prefix", false, "install into the active Python environment (VIRTUAL_ENV/CONDA_PREFIX)")
	fs.StringVar(&s.prefix, "prefix", "", "install under `DIR`/share/jupyter/kernels")
	fs.StringVar(&s.name, "name", kernelspec.DefaultName, "kernel `name`")
}

func (s *scopeFlags) options() (kernelspec.Options, error) {
	n := 0
	o := kernelspec.Options{Scope: kernelspec.User, Name: s.name}
	if s.user {
		n++
	}
	if s.sysPrefix {
		n++
		o.Scope = kernelspec.SysPrefix
	}
	if s.prefix != "" {
		n++
		o.Scope = kernelspec.Prefix
		o.Prefix = s.prefix
	}
	if n > 1 {
		return o, errors.New("choose one of --user, --sys-prefix and --prefix")
	}
	return o, nil
}

func install(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("install", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf scopeFlags
	sf.register(fs)
	display := fs.String("display-name", kernelspec.DefaultDisplayName, "name shown in Jupyter's kernel picker")
	var envs multiFlag
	fs.Var(&envs, "env", "`K=V` added to the kernel's environment (repeatable)")
	noPrebuild := fs.Bool("no-prebuild", false, "do not build the packages cells import ahead of the first cell")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	o, err := sf.options()
	if err != nil {
		return err
	}
	o.DisplayName = *display
	if o.Env, err = kernelspec.ParseEnv(envs); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the goaccel executable: %w", err)
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return fmt.Errorf("resolving the goaccel executable: %w", err)
	}
	o.Executable = exe
	dir, err := kernelspec.Install(o)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "installed kernelspec %s in %s\n", o.Name, dir)
	// The "Download as" route: JupyterLab lists nbconvert's exporters. A
	// scope without a Python environment keeps the kernel usable.
	if sp, err := kernelspec.InstallExporter(o); err != nil {
		fmt.Fprintf(stdout, "the nbconvert exporter (jupyter nbconvert --to goaccel) is not installed: %v\n", err)
	} else {
		fmt.Fprintf(stdout, "installed the nbconvert exporter (jupyter nbconvert --to goaccel) in %s\n", sp)
	}
	if *noPrebuild {
		return nil
	}
	// Cells are compiled against packages built for plugins; building them
	// now makes the first cell of a notebook answer at once.
	if err := runPrebuild(context.Background(), stdout, false); err != nil {
		return fmt.Errorf("the kernelspec is installed, but building the packages cells import failed (the first cells will build them): %w", err)
	}
	return nil
}

func uninstall(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("uninstall", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf scopeFlags
	sf.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	o, err := sf.options()
	if err != nil {
		return err
	}
	dir, err := kernelspec.Uninstall(o)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "removed %s\n", dir)
	if sp, err := kernelspec.UninstallExporter(o); err == nil && sp != "" {
		fmt.Fprintf(stdout, "removed the nbconvert exporter from %s\n", sp)
	}
	return nil
}
