package notebook

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook/cells"
	"github.com/goaccel/goaccel/notebook/gonb"
	"github.com/goaccel/goaccel/notebook/internal/session"
)

// Help is the text of %help.
const Help = `goaccel magics (lines at the start of a cell):
  %help            this text
  %env             list the environment
  %env K           show K;  %env K=V (or %env K V) sets K
  %cd [DIR]        change the working directory (no DIR: show it)
  %args A B ...    set os.Args[1:] for the cells that follow (shell quoting;
                   a fresh flag set, so flag.Parse in a cell sees them;
                   shown when the cell has nothing else, set silently in a
                   cell with code, as GoNB's %args)
  %reset           fresh interpreter: forget all declarations and values
  %who             names declared so far, with their kinds
  %whos            the session's variables (type, memory, length or value),
                   functions, types and constants, as a table
  %time / %%time   time the rest of the cell (wall time); %time CODE times CODE
  %timeit [-n N] [-r R] [-p P] [-q] [-o] STMT
                   time STMT as IPython does: N loops (chosen so one run takes
                   at least 0.2 s) in each of R runs (7), mean ± std. dev. per
                   loop; built once as Go code, and nothing it declares stays
  %%timeit [OPTIONS] [SETUP]
                   the same for the rest of the cell; SETUP runs once per run,
                   untimed
  %goroutines      the goroutines cells started that are still running: state,
                   where they were started, where they are
  %jobs            interrupted cells whose goroutines have not stopped yet
                   (blocked in a system or cgo call): since when, and where;
                   %jobs wait waits until they have stopped
  !CMD             run CMD in a shell, streaming its output; a non-zero exit
                   status fails the cell; a line ending in \ continues
Modules (compiled cells):
  import "M/pkg"   a module not in the session is fetched (go get) on first import
  %go get M@V ...  add or pin module versions (GOPROXY, GOPRIVATE, GOFLAGS apply)
  %go mod          show the session module's go.mod
  %use DIR         make the local module in DIR importable; run it again after
                   editing the module to load the new version
  %use             apply the go.work in the working directory again (a go.work
                   beside the notebook is applied before the first cell)
GoNB's cell language (GoNB's notebooks run here as they are):
  %%  [ARGS]       (or %main) the rest of the cell is func main, run after
                   flag.Parse with ARGS as os.Args[1:]; //gonb:%% works too
  %exec F [ARGS]   run func F as main, with ARGS
  !*CMD            CMD in the session module's directory ($GONB_TMP_DIR),
                   where go get / go mod edit change the cells' go.mod
                   (checked like %go get; ! lines run with bash)
  %test [FLAGS]    run the session's Test/Benchmark functions (default: -test.v
                   and the cell's own tests and benchmarks)
  %ls / %list      the session's declarations; %rm NAME... forgets some
  %capture [-a] F  copy the cell's output to file F
  %%writefile [-a] F   write the rest of the cell to F
  %%script CMD, %%bash, %%sh   run the rest of the cell as CMD's input
  %with_inputs / %with_password   the next ! command reads what you type
  %goflags [F...]  flags for !*go build and %wasm (cells themselves are built
                   with the kernel's settings; the cell says so)
  %wasm            compile the cell (GOOS=js GOARCH=wasm) and run it in the
                   page, in a div named GonbWasmDivId
  %widgets         connect the browser for gonbui's widgets; %widgets_hb pings it
  %goworkfix       the go.work in $GONB_TMP_DIR: replace rules for its modules
  %track, %untrack [PATH]  list of local files (kept for GoNB's notebooks)
  %version         goaccel's version
  gonbui (HTML, Markdown, PNG, SVG, updates, input, widgets, dom) shows its
  output under the running cell; init_NAME functions run as init functions.
Help on a name: strings.Split?  (signature and doc), strings.Split?? (more).
Cells may mix imports, declarations and statements; a trailing expression
is shown as the cell's result. Packages used without an import (strings.X)
are imported automatically.`

// magicResult is what a magic asks of the rest of the cell.
type magicResult struct {
	payload []map[string]any
	// result is shown as the cell's result when its code has none
	// (%timeit -o).
	result frontend.MIMEBundle
	time   bool
	code   string // code to run before the rest of the cell (on the magic's line)
}

// splitMagics separates leading magic lines from the cell's Go code.
func splitMagics(src string) ([]cells.Magic, string) {
	return cells.SplitMagics(src)
}

// runMagic runs one magic line.
func (e *Engine) runMagic(ctx context.Context, m cells.Magic) (magicResult, *frontend.Error) {
	var res magicResult
	text := m.Text
	if strings.HasPrefix(text, "!") {
		return res, e.shellCommand(ctx, text[1:], &cellState{})
	}
	name, arg, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(text, "%"), "%"), " ")
	arg = strings.TrimSpace(arg)
	stdout := func(s string) { e.out.Write("stdout", []byte(s)) }
	switch name {
	case "help":
		stdout(Help + "\n")
	case "env":
		switch {
		case arg == "":
			env := os.Environ()
			sort.Strings(env)
			stdout(strings.Join(env, "\n") + "\n")
		case strings.ContainsAny(arg, "= "):
			k, v, _ := strings.Cut(arg, "=")
			if !strings.Contains(arg, "=") {
				k, v, _ = strings.Cut(arg, " ")
			}
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if err := os.Setenv(k, v); err != nil {
				return res, magicError("%%env: %v", err)
			}
			stdout(fmt.Sprintf("Set: %s=%q\n", k, v))
		default:
			v, ok := os.LookupEnv(arg)
			if !ok {
				return res, magicError("%%env: %s is not set", arg)
			}
			stdout(v + "\n")
		}
	case "cd":
		if arg != "" {
			dir := arg
			if strings.HasPrefix(dir, "~") {
				dir = getenvOr("HOME", "~") + dir[1:]
			}
			if err := os.Chdir(dir); err != nil {
				return res, magicError("%%cd: %v", err)
			}
			if wd, err := os.Getwd(); err == nil {
				_ = os.Setenv(gonb.EnvDir, wd)
			}
		}
		wd, err := os.Getwd()
		if err != nil {
			return res, magicError("%%cd: %v", err)
		}
		stdout(wd + "\n")
	case "reset":
		if arg == "go.mod" {
			return res, magicError("%%reset go.mod: a Go process cannot unload the modules cells loaded: restart the kernel for a fresh session module")
		}
		if arg != "" {
			return res, magicError("%%reset takes no arguments (GoNB's %%reset go.mod is not available here)")
		}
		if err := e.reset(); err != nil {
			return res, magicError("%%reset: %v", err)
		}
		stdout("* State reset: all memorized declarations discarded.\n")
	case "who":
		decls := e.Declarations()
		if len(decls) == 0 {
			stdout("nothing declared yet\n")
			break
		}
		var b strings.Builder
		for _, d := range decls {
			if d.Kind == KindImport {
				fmt.Fprintf(&b, "%-20s %s %q\n", d.Name, d.Kind, d.Path)
				continue
			}
			names := d.Name
			if len(d.Names) > 1 {
				names = strings.Join(d.Names, ", ")
			}
			fmt.Fprintf(&b, "%-20s %s\n", names, d.Kind)
		}
		stdout(b.String())
	case "whos":
		if arg != "" {
			return res, magicError("%%whos takes no arguments")
		}
		e.gonb.publish(e.whos(), nil, "", false)
	case "args":
		args, err := splitArgs(arg)
		if err != nil {
			return res, magicError("%%args: %v", err)
		}
		setArgs(args)
		stdout(fmt.Sprintf("os.Args[1:] = %q\n", args))
	case "go":
		return res, e.goMagic(ctx, arg)
	case "use":
		return res, e.useMagic(ctx, arg)
	case "goroutines":
		stdout(e.goroutines())
	case "jobs":
		return res, e.jobs(ctx, arg, stdout)
	case "time":
		res.time = true
		if arg != "" {
			// The code after %time runs on the magic's own line.
			res.code = strings.Repeat(" ", len(text)-len(arg)) + arg
		}
	default:
		return res, magicError("unknown magic %%%s (try %%help)", name)
	}
	return res, nil
}

// goroutines is the text of %goroutines.
func (e *Engine) goroutines() string {
	if e.compiled == nil {
		return "goaccel: cells are interpreted here (" + e.compErr.Error() + "); their goroutines are not tracked\n"
	}
	return e.compiled.Goroutines()
}

// jobs runs %jobs [wait].
func (e *Engine) jobs(ctx context.Context, arg string, stdout func(string)) *frontend.Error {
	if e.compiled == nil {
		stdout("goaccel: cells are interpreted here (" + e.compErr.Error() + "); an interrupt stops them where they are\n")
		return nil
	}
	switch strings.TrimSpace(arg) {
	case "":
		stdout(e.compiled.Jobs())
	case "wait":
		if err := e.compiled.WaitJobs(ctx, stdout); err != nil {
			return session.ErrInterrupted()
		}
	default:
		return magicError("%%jobs takes nothing or wait, not %q", arg)
	}
	return nil
}

func magicError(format string, a ...any) *frontend.Error {
	msg := fmt.Sprintf(format, a...)
	return &frontend.Error{Name: "MagicError", Value: msg, Traceback: []string{msg}}
}

var helpRE = regexp.MustCompile(`^\s*([\p{L}_][\p{L}\p{N}_]*(?:\.[\p{L}_][\p{L}\p{N}_]*)*)\s*(\?\??)\s*$`)

// helpRequest recognizes "name?" and "name??" (also "?name").
func helpRequest(code string) (name string, detail int, ok bool) {
	c := strings.TrimSpace(code)
	if strings.HasPrefix(c, "?") && !strings.HasSuffix(c, "?") {
		q := strings.TrimLeft(c, "?")
		c = q + c[:len(c)-len(q)]
	}
	m := helpRE.FindStringSubmatch(c)
	if m == nil {
		return "", 0, false
	}
	return m[1], len(m[2]) - 1, true
}
