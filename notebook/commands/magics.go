package commands

// goaccel's own magics: %help, %env, %cd, %args, %reset, %who, %time,
// %goroutines, %jobs.

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook/gonb"
	"github.com/goaccel/goaccel/notebook/internal/session"
)

func registerMagics(r *Registry) {
	r.Register(&Command{Names: []string{"help"}, Help: "  %help            this text",
		Run: func(_ context.Context, env Env, _ *Cell, _ string) *frontend.Error {
			stdout(env, r.Help()+"\n")
			return nil
		}})
	r.Register(&Command{Names: []string{"env"}, Help: "  %env             list the environment\n  %env K           show K;  %env K=V (or %env K V) sets K", Run: envMagic})
	r.Register(&Command{Names: []string{"cd"}, Help: "  %cd [DIR]        change the working directory (no DIR: show it)", Run: cdMagic})
	r.Register(&Command{Names: []string{"args"}, Help: `  %args A B ...    set os.Args[1:] for the cells that follow (shell quoting;
                   a fresh flag set, so flag.Parse in a cell sees them;
                   shown when the cell has nothing else, set silently in a
                   cell with code, as GoNB's %args)`, Run: argsMagic})
	r.Register(&Command{Names: []string{"time", "%time"}, Help: "  %time / %%time   time the rest of the cell (wall time); %time CODE times CODE", Run: timeMagic})
}

func stdout(env Env, s string) { env.Write("stdout", []byte(s)) }
func stderr(env Env, s string) { env.Write("stderr", []byte(s)) }

func envMagic(_ context.Context, env Env, _ *Cell, arg string) *frontend.Error {
	switch {
	case arg == "":
		vars := os.Environ()
		sort.Strings(vars)
		stdout(env, strings.Join(vars, "\n")+"\n")
	case strings.ContainsAny(arg, "= "):
		k, v, _ := strings.Cut(arg, "=")
		if !strings.Contains(arg, "=") {
			k, v, _ = strings.Cut(arg, " ")
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if err := os.Setenv(k, v); err != nil {
			return Errorf("%%env: %v", err)
		}
		stdout(env, fmt.Sprintf("Set: %s=%q\n", k, v))
	default:
		v, ok := os.LookupEnv(arg)
		if !ok {
			return Errorf("%%env: %s is not set", arg)
		}
		stdout(env, v+"\n")
	}
	return nil
}

func cdMagic(_ context.Context, env Env, _ *Cell, arg string) *frontend.Error {
	if arg != "" {
		dir := arg
		if strings.HasPrefix(dir, "~") {
			dir = getenvOr("HOME", "~") + dir[1:]
		}
		if err := os.Chdir(dir); err != nil {
			return Errorf("%%cd: %v", err)
		}
		if wd, err := os.Getwd(); err == nil {
			_ = os.Setenv(gonb.EnvDir, wd)
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return Errorf("%%cd: %v", err)
	}
	stdout(env, wd+"\n")
	return nil
}

func argsMagic(_ context.Context, env Env, c *Cell, arg string) *frontend.Error {
	args, err := SplitArgs(arg)
	if err != nil {
		return Errorf("%%args: %v", err)
	}
	SetArgs(args)
	if !c.Quiet {
		stdout(env, fmt.Sprintf("os.Args[1:] = %q\n", args))
	}
	return nil
}

func timeMagic(_ context.Context, _ Env, c *Cell, arg string) *frontend.Error {
	c.Time = true
	if arg != "" {
		// The code after %time runs on the magic's own line, at its own
		// column.
		c.Splices = append(c.Splices, Splice{Line: c.cmd.Line, Code: strings.Repeat(" ", len(c.cmd.Text)-len(arg)) + arg})
	}
	return nil
}

func getenvOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// expandPath expands ~ and environment variables in a path (GoNB's
// %capture and %%writefile do).
func expandPath(p string) string {
	if strings.HasPrefix(p, "~") {
		p = getenvOr("HOME", "~") + p[1:]
	}
	return os.ExpandEnv(p)
}

// interrupted is the error of a command stopped by an interrupt.
func interrupted() *frontend.Error { return session.ErrInterrupted() }
