package commands

// Shell commands: ! (and GoNB's !* and %with_inputs), %%script, %%bash,
// %%sh and %%writefile.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook/gonb"
	"github.com/goaccel/goaccel/notebook/internal/session"
)

// inputWait is how long a command run after %with_inputs runs before the
// user is asked for a line (GoNB waits as long).
const inputWait = 200 * time.Millisecond

// shellRun is one command for runShell.
type shellRun struct {
	argv  []string  // the program and its arguments
	shown string    // the command as errors name it
	dir   string    // where it runs ("": the working directory)
	stdin io.Reader // its standard input (nil: none)
	// ask: the user types its standard input, a line at a time, hidden
	// with password (%with_inputs, %with_password).
	ask, password bool
}

// shellCommand runs a ! line: with bash (as GoNB does; sh where there is
// no bash), in the session module's directory for !* (GoNB's temporary
// module, where `go get` and `go mod edit` act on the cells' go.mod).
func shellCommand(ctx context.Context, env Env, c *Cell, text string) *frontend.Error {
	command := strings.TrimSpace(text)
	inModule := strings.HasPrefix(command, "*")
	if inModule {
		command = strings.TrimSpace(command[1:])
	}
	if command == "" {
		return nil
	}
	r := shellRun{argv: []string{shellPath(), "-c", command}, shown: "!" + command,
		ask: c.WithInputs || c.WithPassword, password: c.WithPassword}
	if inModule {
		r.shown = "!*" + command
	}
	c.WithInputs, c.WithPassword = false, false
	if !inModule {
		return runShell(ctx, env, r)
	}
	comp := env.Compiled()
	if comp == nil {
		r.dir = env.GonbDir()
		return runShell(ctx, env, r)
	}
	b := comp.Builder()
	r.dir = b.Dir()
	writeProgram(ctx, env, comp, filepath.Join(r.dir, "main.go"))
	var shellErr *frontend.Error
	err := b.External(ctx, strings.ReplaceAll(r.shown, "\\\n", " "), func() error {
		if shellErr = runShell(ctx, env, r); shellErr != nil {
			return errors.New(shellErr.Value)
		}
		return nil
	})
	if shellErr != nil {
		return shellErr
	}
	if err != nil {
		return moduleError(strings.ReplaceAll(r.shown, "\\\n", " "), err)
	}
	return nil
}

// shellPath is the shell ! lines run in.
func shellPath() string {
	if p, err := exec.LookPath("bash"); err == nil {
		return p
	}
	return "/bin/sh"
}

// runShell runs a command, streaming its output. A non-zero exit status
// is a ShellError naming the command and the status.
func runShell(ctx context.Context, env Env, r shellRun) *frontend.Error {
	shown := strings.ReplaceAll(r.shown, "\\\n", " ")
	cmd := exec.CommandContext(ctx, r.argv[0], r.argv[1:]...)
	cmd.Dir = r.dir
	killGroupOnCancel(cmd)
	cmd.WaitDelay = time.Second
	var stdinW io.WriteCloser
	switch {
	case r.ask:
		w, err := cmd.StdinPipe()
		if err != nil {
			return Errorf("%s: %v", shown, err)
		}
		stdinW = w
	case r.stdin != nil:
		cmd.Stdin = r.stdin
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return Errorf("%s: %v", shown, err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return Errorf("%s: %v", shown, err)
	}
	if err := cmd.Start(); err != nil {
		return Errorf("%s: %v", shown, err)
	}
	var wg sync.WaitGroup
	pump := func(name string, r io.Reader) {
		defer wg.Done()
		buf := make([]byte, 16*1024)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				env.Write(name, buf[:n])
			}
			if err != nil {
				return
			}
		}
	}
	wg.Add(2)
	go pump("stdout", stdout)
	go pump("stderr", stderr)
	exited := make(chan struct{})
	if stdinW != nil {
		go feedInput(ctx, env, stdinW, r.password, exited)
	}
	wg.Wait()
	err = cmd.Wait()
	close(exited)
	if ctx.Err() != nil {
		return session.ErrInterrupted()
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		status := fmt.Sprintf("exit status %d", ee.ExitCode())
		if ee.ExitCode() < 0 {
			status = ee.String() // signal: killed
		}
		msg := fmt.Sprintf("%s: %s", shown, status)
		return &frontend.Error{Name: "ShellError", Value: msg, Traceback: []string{msg}}
	}
	if err != nil {
		return Errorf("%s: %v", shown, err)
	}
	return nil
}

// feedInput asks the user for lines while a command runs and writes them
// to its standard input: after the command has run a moment, a line at a
// time, until it exits.
func feedInput(ctx context.Context, env Env, w io.WriteCloser, password bool, exited <-chan struct{}) {
	defer w.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-exited:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(inputWait):
		}
		line, err := env.Input(ctx, "", password)
		if err != nil {
			return
		}
		if _, err := io.WriteString(w, line+"\n"); err != nil {
			return
		}
	}
}

// cellMagic runs GoNB's cell magics: %%writefile [-a] FILE writes the rest
// of the cell to FILE; %%script PROGRAM [ARGS], %%bash and %%sh run the
// program with the rest of the cell as its standard input.
func writefileMagic(_ context.Context, env Env, args []string, body string) *frontend.Error {
	{
		flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
		appending := len(args) == 2 && args[0] == "-a"
		if appending {
			flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
			args = args[1:]
		}
		if len(args) != 1 {
			return Errorf("%%%%writefile takes one file (and -a to append to it): %%%%writefile [-a] FILE")
		}
		path := expandPath(args[0])
		f, err := os.OpenFile(path, flags, 0o644)
		if err != nil {
			return Errorf("%%%%writefile: %v", err)
		}
		if !strings.HasSuffix(body, "\n") {
			body += "\n"
		}
		_, werr := f.WriteString(body)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return Errorf("%%%%writefile: %v", werr)
		}
		verb := "written to"
		if appending {
			verb = "appended to"
		}
		stderr(env, fmt.Sprintf("Cell contents %s %q.\n", verb, path))
		return nil
	}
}

// scriptMagic runs %%script PROGRAM [ARGS] (%%bash and %%sh: name) with the
// rest of the cell as its standard input.
func scriptMagic(name string) CellHandler {
	return func(ctx context.Context, env Env, args []string, body string) *frontend.Error {
		argv := args
		if name != "script" {
			if len(argv) > 0 {
				return Errorf("%%%%%s takes no arguments", name)
			}
			argv = []string{name}
		}
		if len(argv) == 0 {
			return Errorf("%%%%script needs a program: %%%%script PROGRAM [ARGS...]")
		}
		if p, err := exec.LookPath(argv[0]); err == nil {
			argv = append([]string{p}, argv[1:]...)
		}
		return runShell(ctx, env, shellRun{argv: argv, shown: "%%" + name + " " + strings.Join(args, " "),
			stdin: strings.NewReader(body + "\n")})
	}
}

// writeProgram writes the session as a program (its declarations and its
// func main, as GoNB keeps the last cell's program in main.go beside the
// go.mod), for !* commands such as go build or go vet. Nothing is written
// when it cannot be assembled.
func writeProgram(ctx context.Context, env Env, comp Compiled, path string) {
	var decls []gonb.Decl
	main := "func main() {}"
	for _, d := range env.Declarations() {
		if d.FromStatement {
			continue
		}
		if d.Kind == session.KindFunc && d.Name == "main" {
			main = d.Source
			continue
		}
		names := d.Names
		if len(names) == 0 {
			names = []string{d.Name}
		}
		decls = append(decls, gonb.Decl{Names: names, Source: d.Source, Import: d.Kind == session.KindImport, Path: d.Path})
	}
	resolve := func(name, src string) string { return comp.Resolve(ctx, name, src) }
	src, err := gonb.Program(decls, main, "", resolve)
	if err != nil {
		return
	}
	_ = os.WriteFile(path, []byte(src), 0o644)
}

func registerShell(r *Registry) {
	r.Register(&Command{Names: []string{"with_inputs", "with_password"}, Section: GoNB,
		Help: "  %with_inputs / %with_password   the next ! command reads what you type",
		Run: func(_ context.Context, _ Env, c *Cell, _ string) *frontend.Error {
			name := c.cmd.Name()
			if !c.AllowStdin {
				return Errorf("%%%s: this front end does not allow input (allow_stdin is false)", name)
			}
			c.WithInputs = name == "with_inputs"
			c.WithPassword = name == "with_password"
			return nil
		}})
	r.RegisterCellMagic(&CellMagic{Name: "writefile", Section: GoNB, Help: "  %%writefile [-a] F   write the rest of the cell to F", Run: writefileMagic})
	r.RegisterCellMagic(&CellMagic{Name: "script", Section: GoNB, Help: "  %%script CMD, %%bash, %%sh   run the rest of the cell as CMD's input", Run: scriptMagic("script")})
	r.RegisterCellMagic(&CellMagic{Name: "bash", Section: GoNB, Run: scriptMagic("bash")})
	r.RegisterCellMagic(&CellMagic{Name: "sh", Section: GoNB, Run: scriptMagic("sh")})
}
