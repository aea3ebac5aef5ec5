package notebook

// GoNB's special commands (package gonb parses them), beside goaccel's
// magics (magics.go): each with GoNB's meaning where it can have it here.

import (
	"context"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook/cells"
	"github.com/goaccel/goaccel/notebook/gonb"
)

// cellState is what a cell's commands ask of the rest of the cell.
type cellState struct {
	tee *teeIO
	// withInputs / withPassword: the next ! command reads what the user
	// types (GoNB's %with_inputs, %with_password).
	withInputs, withPassword bool
	// test: run the session's tests after the cell's code (%test).
	test *testRequest
	// wasm: the cell is compiled for the browser (%wasm).
	wasm bool
	// src and count are the cell's text and execution count; code is its
	// Go code, which %%timeit times (and then sets timed: it ran).
	src, code string
	count     int
	timed     bool
	// quiet: the cell has code or other commands besides the one that
	// runs, so %args sets the arguments without echoing them (as GoNB's
	// %args, which prints nothing); a cell of %args alone shows them.
	quiet bool
}

// runCommand runs one command line of a cell: GoNB's commands here,
// goaccel's magics in runMagic.
func (e *Engine) runCommand(ctx context.Context, cmd gonb.Command, st *cellState) (magicResult, *frontend.Error) {
	var res magicResult
	name, arg := cmd.Name(), cmd.Arg()
	stdout := func(s string) { e.out.Write("stdout", []byte(s)) }
	switch name {
	case "!":
		return res, e.shellCommand(ctx, arg, st)
	case "goflags":
		return res, e.goflags(arg)
	case "timeit", "%timeit":
		return e.timeit(ctx, cmd, st, name == "%timeit")
	case "test":
		args, err := gonb.SplitArgs(arg)
		if err != nil {
			return res, magicError("%%test: %v", err)
		}
		st.test = &testRequest{args: args, given: arg != ""}
	case "rm", "remove":
		return res, e.removeDefinitions(arg)
	case "ls", "list":
		e.listDefinitions()
	case "capture":
		return res, st.tee.capture(arg)
	case "version":
		e.gonb.publish(frontend.MIMEBundle{"text/markdown": fmt.Sprintf(
			"## goaccel %s\n\nGo %s (OS: %s, Arch: %s); GoNB's cell language and gonbui protocol (GoNB v0.11.1)\n",
			e.opts.Version, strings.TrimPrefix(runtime.Version(), "go"), runtime.GOOS, runtime.GOARCH)}, nil, "", false)
	case "with_inputs", "with_password":
		if !e.cells.Cell().AllowStdin {
			return res, magicError("%%%s: this front end does not allow input (allow_stdin is false)", name)
		}
		st.withInputs = name == "with_inputs"
		st.withPassword = name == "with_password"
	case "widgets":
		e.gonb.needFrontend()
		if !e.gonb.front.WaitConnected(frontendWait) {
			e.out.Stderr(noFrontend)
		}
	case "widgets_hb":
		msg := "Timed-out, no heartbeat pong received. Try installing front-end websockets with %widgets ?"
		if e.gonb.front.Heartbeat(time.Second) {
			msg = "Heartbeat pong received back."
		}
		e.gonb.publish(frontend.MIMEBundle{"text/html": msg}, nil, "", false)
	case "wasm":
		if strings.TrimSpace(arg) != "" {
			return res, magicError("%%wasm takes no arguments")
		}
		if err := e.prepareWasm(); err != nil {
			return res, err
		}
		st.wasm = true
	case "goworkfix":
		return res, e.goWorkFix(ctx)
	case "track":
		e.track(arg)
	case "untrack":
		e.untrack(arg)
	case "args":
		if !st.quiet {
			return e.runMagic(ctx, cells.Magic{Line: cmd.Line, Text: cmd.Text})
		}
		args, err := splitArgs(arg)
		if err != nil {
			return res, magicError("%%args: %v", err)
		}
		setArgs(args)
	case "autoget", "noautoget":
		if name == "noautoget" {
			stdout("goaccel: imports of modules the session lacks are always fetched (GoNB's %noautoget has no equivalent here); %go get MODULE@VERSION pins a version first\n")
		}
	default:
		if strings.HasPrefix(name, "%") && gonb.IsCellMagic(name[1:]) {
			return res, magicError("%q can only appear at the start of the cell", "%"+name)
		}
		return e.runMagic(ctx, cells.Magic{Line: cmd.Line, Text: cmd.Text})
	}
	return res, nil
}

// goflags is %goflags: GoNB passes these flags to go build. Cells here
// are compiled by goaccel into plugins the kernel loads: the flags are
// kept and shown, and what they would change is named.
func (e *Engine) goflags(arg string) *frontend.Error {
	g := e.gonb
	if arg != "" {
		args, err := gonb.SplitArgs(arg)
		if err != nil {
			return magicError("%%goflags: %v", err)
		}
		var kept []string
		for _, a := range args {
			if a != "" {
				kept = append(kept, a)
			}
		}
		g.mu.Lock()
		g.goflags = kept
		g.mu.Unlock()
		if len(kept) > 0 {
			e.out.Stderr(fmt.Sprintf("goaccel: %%goflags %s: kept for `!*go build` and %%wasm; cells are compiled into plugins the kernel "+
				"loads with the kernel's own build settings, so these flags do not change how cells are built "+
				"(coverage of cells, for one, is not collected)\n", strings.Join(kept, " ")))
		}
	}
	g.mu.Lock()
	flags := append([]string{}, g.goflags...)
	g.mu.Unlock()
	e.out.Write("stdout", []byte(fmt.Sprintf("%%goflags=%q\n", flags)))
	return nil
}

// listDefinitions is %ls: the session's declarations by kind, as HTML.
func (e *Engine) listDefinitions() {
	groups := map[string][]string{}
	for _, d := range e.Declarations() {
		kind := map[DeclKind]string{KindImport: "Imports", KindConst: "Constants", KindType: "Types",
			KindVar: "Variables", KindFunc: "Functions", KindMethod: "Functions"}[d.Kind]
		names := d.Names
		if len(names) == 0 {
			names = []string{d.Name}
		}
		if d.Kind == KindImport && (d.Name == "_" || d.Name == ".") {
			names = []string{d.Name + " " + d.Path}
		}
		groups[kind] = append(groups[kind], names...)
	}
	e.gonb.publish(frontend.MIMEBundle{"text/html": "<h3>Memorized Definitions</h3>\n"}, nil, "", false)
	for _, kind := range []string{"Imports", "Constants", "Types", "Variables", "Functions"} {
		names := groups[kind]
		if len(names) == 0 {
			continue
		}
		sort.Strings(names)
		var b strings.Builder
		b.WriteString("<h4>" + kind + "</h4>\n<ul>\n")
		for i, n := range names {
			if i > 0 {
				b.WriteString("\n")
			}
			b.WriteString("<li><pre>" + html.EscapeString(n) + "</pre></li>")
		}
		b.WriteString("\n</ul>")
		e.gonb.publish(frontend.MIMEBundle{"text/html": b.String()}, nil, "", false)
	}
}

// removeDefinitions is %rm NAME...: the session forgets the declarations.
func (e *Engine) removeDefinitions(arg string) *frontend.Error {
	names := strings.Fields(arg)
	if len(names) == 0 {
		return magicError("%%rm: name the declarations to forget (%%ls lists them)")
	}
	if e.compiled == nil {
		return magicError("%%rm: cells are interpreted here (%s), and the interpreter cannot forget a declaration; %%reset forgets them all", e.compReason())
	}
	for _, n := range names {
		kind, ok := e.compiled.Forget(n)
		if !ok {
			e.out.Stderr(fmt.Sprintf(". key %q not found in any definition, not removed\n", n))
			continue
		}
		e.log.Forget(n)
		e.out.Write("stdout", []byte(fmt.Sprintf(". removed %s %s\n", kind, n)))
	}
	return nil
}

// track / untrack are %track and %untrack: GoNB tells gopls about files of
// local modules. goaccel's completion reads the packages cells import
// (local modules through %use included) without gopls; the list is kept
// and shown.
func (e *Engine) track(arg string) {
	g := e.gonb
	for _, p := range strings.Fields(arg) {
		abs, err := filepath.Abs(p)
		if err == nil {
			p = abs
		}
		if _, err := os.Stat(p); err != nil {
			e.out.Stderr(fmt.Sprintf("%%track %s: %v\n", p, err))
			continue
		}
		g.mu.Lock()
		g.tracked = append(g.tracked, p)
		g.mu.Unlock()
		e.out.Write("stdout", []byte(fmt.Sprintf("\tTracking %q\n", p)))
	}
	if arg == "" {
		e.showTracked()
	}
}

// addTracked adds dir to the tracked folders, once.
func (g *gonbSession) addTracked(dir string) {
	if dir == "" {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, t := range g.tracked {
		if t == dir {
			return
		}
	}
	g.tracked = append(g.tracked, dir)
}

func (e *Engine) untrack(arg string) {
	g := e.gonb
	for _, p := range strings.Fields(arg) {
		prefix, all := strings.CutSuffix(p, "...")
		g.mu.Lock()
		kept := g.tracked[:0]
		for _, t := range g.tracked {
			if t == p || (all && strings.HasPrefix(t, prefix)) {
				continue
			}
			kept = append(kept, t)
		}
		g.tracked = kept
		g.mu.Unlock()
		e.out.Write("stdout", []byte(fmt.Sprintf("\tUntracked %q\n", p)))
	}
	if arg == "" {
		e.showTracked()
	}
}

func (e *Engine) showTracked() {
	g := e.gonb
	g.mu.Lock()
	tracked := append([]string{}, g.tracked...)
	g.mu.Unlock()
	text := "<b>No files or directory being tracked yet</b>\n"
	if len(tracked) > 0 {
		text = "<b>List of files/directories being tracked:</b>\n<ul>\n"
		for _, t := range tracked {
			text += "<li>" + html.EscapeString(t) + "</li>\n"
		}
		text += "</ul>\n"
	}
	g.publish(frontend.MIMEBundle{"text/html": text}, nil, "", false)
}

// teeIO is a cell's output that %capture copies to a file: stream text
// and the text of displays, as GoNB's %capture writes them.
type teeIO struct {
	frontend.CellIO
	mu sync.Mutex
	f  *os.File
}

// capture starts copying the cell's output: %capture [-a] FILE.
func (t *teeIO) capture(arg string) *frontend.Error {
	args, err := gonb.SplitArgs(arg)
	if err != nil {
		return magicError("%%capture: %v", err)
	}
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if len(args) == 2 && args[0] == "-a" {
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
		args = args[1:]
	}
	if len(args) != 1 {
		return magicError("%%capture takes one file (and -a to append to it): %%capture [-a] FILE")
	}
	path := expandPath(args[0])
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return magicError("%%capture: %v", err)
	}
	t.mu.Lock()
	if t.f != nil {
		t.f.Close()
	}
	t.f = f
	t.mu.Unlock()
	return nil
}

func (t *teeIO) write(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.f != nil {
		_, _ = t.f.WriteString(s)
	}
}

func (t *teeIO) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.f != nil {
		t.f.Close()
		t.f = nil
	}
}

func (t *teeIO) Stream(name, text string) {
	// The kernel's own notes (added imports, fetched modules) are not the
	// cell's output.
	if !(name == "stderr" && strings.HasPrefix(text, "goaccel: ")) {
		t.write(text)
	}
	t.CellIO.Stream(name, text)
}

func (t *teeIO) Display(data frontend.MIMEBundle, md map[string]any, id string) {
	t.writeData(data)
	t.CellIO.Display(data, md, id)
}

func (t *teeIO) UpdateDisplay(data frontend.MIMEBundle, md map[string]any, id string) {
	t.writeData(data)
	t.CellIO.UpdateDisplay(data, md, id)
}

func (t *teeIO) writeData(data frontend.MIMEBundle) {
	for _, m := range []string{"text/plain", "text/markdown", "text/html"} {
		if s, ok := data[m].(string); ok {
			t.write(s)
			return
		}
	}
}

// expandPath expands ~ and environment variables in a path (GoNB's
// %capture and %%writefile do).
func expandPath(p string) string {
	if strings.HasPrefix(p, "~") {
		p = getenvOr("HOME", "~") + p[1:]
	}
	return os.ExpandEnv(p)
}
