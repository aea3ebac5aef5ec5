package commands

// GoNB's special commands, each with GoNB's meaning where it can have it
// here: %goflags, %track, %untrack, %version, %widgets, %wasm, %test,
// %capture, %autoget.

import (
	"context"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook/gonb"
)

// registerLanguage documents what package gonb parses: %% and %exec
// (func main), and !* (a ! line in the session module).
func registerLanguage(r *Registry) {
	r.Register(&Command{Names: nil, Section: GoNB, Help: `  %%  [ARGS]       (or %main) the rest of the cell is func main, run after
                   flag.Parse with ARGS as os.Args[1:]; //gonb:%% works too
  %exec F [ARGS]   run func F as main, with ARGS
  !*CMD            CMD in the session module's directory ($GONB_TMP_DIR),
                   where go get / go mod edit change the cells' go.mod
                   (checked like %go get; ! lines run with bash)`})
}

func registerGoNB(r *Registry) {
	s := r.state
	r.Register(&Command{Names: nil, Section: Magics, Help: `  !CMD             run CMD in a shell, streaming its output; a non-zero exit
                   status fails the cell; a line ending in \ continues`})
	r.Register(&Command{Names: []string{"test"}, Section: GoNB, Help: `  %test [FLAGS]    run the session's Test/Benchmark functions (default: -test.v
                   and the cell's own tests and benchmarks)`, Run: testMagic})
	r.Register(&Command{Names: []string{"capture"}, Section: GoNB, Help: "  %capture [-a] F  copy the cell's output to file F",
		Run: func(_ context.Context, _ Env, c *Cell, arg string) *frontend.Error { return c.Tee.capture(arg) }})
	r.Register(&Command{Names: []string{"goflags"}, Section: GoNB, Help: `  %goflags [F...]  flags for !*go build and %wasm (cells themselves are built
                   with the kernel's settings; the cell says so)`,
		Run: func(_ context.Context, env Env, _ *Cell, arg string) *frontend.Error { return goflags(env, s, arg) }})
	r.Register(&Command{Names: []string{"wasm"}, Section: GoNB, Help: `  %wasm            compile the cell (GOOS=js GOARCH=wasm) and run it in the
                   page, in a div named GonbWasmDivId`, Run: wasmMagic})
	r.Register(&Command{Names: []string{"widgets", "widgets_hb"}, Section: GoNB, Help: "  %widgets         connect the browser for gonbui's widgets; %widgets_hb pings it", Run: widgetsMagic})
	r.Register(&Command{Names: []string{"track", "untrack"}, Section: GoNB, Help: "  %track, %untrack [PATH]  list of local files (kept for GoNB's notebooks)",
		Run: func(_ context.Context, env Env, c *Cell, arg string) *frontend.Error {
			if c.cmd.Name() == "track" {
				s.track(env, arg)
			} else {
				s.untrack(env, arg)
			}
			return nil
		}})
	r.Register(&Command{Names: []string{"version"}, Section: GoNB, Help: "  %version         goaccel's version", Run: versionMagic})
	r.Register(&Command{Names: []string{"autoget", "noautoget"}, Section: GoNB, Help: "  %autoget, %noautoget  accepted; imports of modules the session lacks are always\n                   fetched here", Run: func(_ context.Context, env Env, c *Cell, _ string) *frontend.Error {
		if c.cmd.Name() == "noautoget" {
			stdout(env, "goaccel: imports of modules the session lacks are always fetched (GoNB's %noautoget has no equivalent here); %go get MODULE@VERSION pins a version first\n")
		}
		return nil
	}})
}

func versionMagic(_ context.Context, env Env, _ *Cell, _ string) *frontend.Error {
	env.Publish(frontend.MIMEBundle{"text/markdown": fmt.Sprintf(
		"## goaccel %s\n\nGo %s (OS: %s, Arch: %s); GoNB's cell language and gonbui protocol (GoNB v0.11.1)\n",
		env.Version(), strings.TrimPrefix(runtime.Version(), "go"), runtime.GOOS, runtime.GOARCH)})
	return nil
}

func widgetsMagic(_ context.Context, env Env, c *Cell, _ string) *frontend.Error {
	if c.cmd.Name() == "widgets" {
		if !env.Widgets() {
			stderr(env, NoFrontend)
		}
		return nil
	}
	msg := "Timed-out, no heartbeat pong received. Try installing front-end websockets with %widgets ?"
	if env.Heartbeat() {
		msg = "Heartbeat pong received back."
	}
	env.Publish(frontend.MIMEBundle{"text/html": msg})
	return nil
}

// NoFrontend says why gonbui's widgets and dom functions wait forever.
const NoFrontend = "goaccel: gonbui: no browser has connected to this kernel: gonbui's widgets and " +
	"gonbui/dom (which run JavaScript in the notebook page) need JupyterLab or Jupyter Notebook in " +
	"a browser; their values wait until one connects\n"

func wasmMagic(_ context.Context, env Env, c *Cell, arg string) *frontend.Error {
	if strings.TrimSpace(arg) != "" {
		return Errorf("%%wasm takes no arguments")
	}
	if err := c.state.prepareWasm(env); err != nil {
		return err
	}
	c.Wasm = true
	return nil
}

// goflags is %goflags: GoNB passes these flags to go build. Cells here
// are compiled by goaccel into plugins the kernel loads: the flags are
// kept and shown, and what they would change is named.
func goflags(env Env, s *State, arg string) *frontend.Error {
	if arg != "" {
		args, err := gonb.SplitArgs(arg)
		if err != nil {
			return Errorf("%%goflags: %v", err)
		}
		var kept []string
		for _, a := range args {
			if a != "" {
				kept = append(kept, a)
			}
		}
		s.mu.Lock()
		s.goflags = kept
		s.mu.Unlock()
		if len(kept) > 0 {
			stderr(env, fmt.Sprintf("goaccel: %%goflags %s: kept for `!*go build` and %%wasm; cells are compiled into plugins the kernel "+
				"loads with the kernel's own build settings, so these flags do not change how cells are built "+
				"(coverage of cells, for one, is not collected)\n", strings.Join(kept, " ")))
		}
	}
	stdout(env, fmt.Sprintf("%%goflags=%q\n", s.GoFlags()))
	return nil
}

// track and untrack are %track and %untrack: GoNB tells gopls about files
// of local modules. goaccel's completion reads the packages cells import
// (local modules through %use included) without gopls; the list is kept
// and shown.
func (s *State) track(env Env, arg string) {
	for _, p := range strings.Fields(arg) {
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		if _, err := os.Stat(p); err != nil {
			stderr(env, fmt.Sprintf("%%track %s: %v\n", p, err))
			continue
		}
		s.mu.Lock()
		s.tracked = append(s.tracked, p)
		s.mu.Unlock()
		stdout(env, fmt.Sprintf("\tTracking %q\n", p))
	}
	if arg == "" {
		s.showTracked(env)
	}
}

func (s *State) untrack(env Env, arg string) {
	for _, p := range strings.Fields(arg) {
		prefix, all := strings.CutSuffix(p, "...")
		s.mu.Lock()
		kept := s.tracked[:0]
		for _, t := range s.tracked {
			if t == p || (all && strings.HasPrefix(t, prefix)) {
				continue
			}
			kept = append(kept, t)
		}
		s.tracked = kept
		s.mu.Unlock()
		stdout(env, fmt.Sprintf("\tUntracked %q\n", p))
	}
	if arg == "" {
		s.showTracked(env)
	}
}

func (s *State) showTracked(env Env) {
	s.mu.Lock()
	tracked := append([]string{}, s.tracked...)
	s.mu.Unlock()
	text := "<b>No files or directory being tracked yet</b>\n"
	if len(tracked) > 0 {
		text = "<b>List of files/directories being tracked:</b>\n<ul>\n"
		for _, t := range tracked {
			text += "<li>" + html.EscapeString(t) + "</li>\n"
		}
		text += "</ul>\n"
	}
	env.Publish(frontend.MIMEBundle{"text/html": text})
}

// Tee is a cell's output that %capture copies to a file: stream text and
// the text of displays, as GoNB's %capture writes them.
type Tee struct {
	frontend.CellIO
	mu sync.Mutex
	f  *os.File
}

// NewTee wraps a cell's IO.
func NewTee(io frontend.CellIO) *Tee { return &Tee{CellIO: io} }

// capture starts copying the cell's output: %capture [-a] FILE.
func (t *Tee) capture(arg string) *frontend.Error {
	args, err := gonb.SplitArgs(arg)
	if err != nil {
		return Errorf("%%capture: %v", err)
	}
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if len(args) == 2 && args[0] == "-a" {
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
		args = args[1:]
	}
	if len(args) != 1 {
		return Errorf("%%capture takes one file (and -a to append to it): %%capture [-a] FILE")
	}
	path := expandPath(args[0])
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return Errorf("%%capture: %v", err)
	}
	t.mu.Lock()
	if t.f != nil {
		t.f.Close()
	}
	t.f = f
	t.mu.Unlock()
	return nil
}

func (t *Tee) write(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.f != nil {
		_, _ = t.f.WriteString(s)
	}
}

// Close stops copying (at the cell's end).
func (t *Tee) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.f != nil {
		t.f.Close()
		t.f = nil
	}
}

func (t *Tee) Stream(name, text string) {
	// The kernel's own notes (added imports, fetched modules) are not the
	// cell's output.
	if !(name == "stderr" && strings.HasPrefix(text, "goaccel: ")) {
		t.write(text)
	}
	t.CellIO.Stream(name, text)
}

func (t *Tee) Display(data frontend.MIMEBundle, md map[string]any, id string) {
	t.writeData(data)
	t.CellIO.Display(data, md, id)
}

func (t *Tee) UpdateDisplay(data frontend.MIMEBundle, md map[string]any, id string) {
	t.writeData(data)
	t.CellIO.UpdateDisplay(data, md, id)
}

func (t *Tee) writeData(data frontend.MIMEBundle) {
	for _, m := range []string{"text/plain", "text/markdown", "text/html"} {
		if s, ok := data[m].(string); ok {
			t.write(s)
			return
		}
	}
}
