package notebook

// The engine's side of GoNB's gonbui (package gonb): the session's pipe
// server, the browser's comm, and where what cells send goes.

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/goaccel/goaccel/display"
	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook/commands"
	"github.com/goaccel/goaccel/notebook/gonb"
)

// frontendWait is how long a cell's first use of gonbui's comms waits for
// a browser to connect before it says that none did (GoNB waits as long).
const frontendWait = 3 * time.Second

// gonbSession is what the engine keeps for GoNB's notebooks.
type gonbSession struct {
	e     *Engine
	dir   string // the pipes (and GONB_TMP_DIR when cells are interpreted)
	srv   *gonb.Server
	front *gonb.Front

	mu        sync.Mutex
	known     map[string]bool // display ids shown once (later ones update)
	installed int             // the cell the browser's script was sent to
	warned    int             // the cell told that no browser connected
}

// startGonb makes the session's gonbui pipes and sets the environment
// GoNB's notebooks read. A failure leaves gonbui without a kernel (its
// calls do nothing), which the first cell that uses it is told.
func (e *Engine) startGonb() {
	g := &gonbSession{e: e, known: map[string]bool{}}
	e.gonb = g
	dir, err := os.MkdirTemp("", "goaccel-gonb-")
	if err != nil {
		return
	}
	g.dir = dir
	g.front = gonb.NewFront(func(address string, value any) {
		if g.srv != nil {
			g.srv.Send(address, value)
		}
	})
	srv, err := gonb.NewServer(dir, func() gonb.Handler { return gonbHandler{g} })
	if err != nil {
		e.out.Stderr(fmt.Sprintf("goaccel: gonbui will not show anything: %v\n", err))
		return
	}
	g.srv = srv
	env := srv.Env()
	wd, _ := os.Getwd()
	env[gonb.EnvDir] = wd
	env[gonb.EnvTmpDir] = dir
	if e.compiled != nil {
		env[gonb.EnvTmpDir] = e.compiled.Builder().Dir()
	}
	if root := gonb.JupyterRoot(); root != "" {
		env[gonb.EnvJupyterRoot] = root
	}
	if e.opts.KernelID != "" {
		env[gonb.EnvKernelID] = e.opts.KernelID
	}
	env[gonb.EnvVersion] = "goaccel " + e.opts.Version
	for k, v := range env {
		_ = os.Setenv(k, v)
	}
}

// close stops the pipes.
func (g *gonbSession) close() {
	if g == nil {
		return
	}
	if g.srv != nil {
		_ = g.srv.Close()
	}
	if g.dir != "" {
		_ = os.RemoveAll(g.dir)
	}
}

// drainWait bounds drain: it returns as soon as the pipe is idle, so the
// bound only matters for a cell that floods gonbui without a pause; it is
// generous so that a busy machine's scheduling never reorders a display
// or an input box's prompt.
const drainWait = 10 * time.Second

// drain waits until what cells wrote to gonbui so far has been handled.
func (g *gonbSession) drain() {
	if g != nil && g.srv != nil {
		g.srv.Drain(drainWait)
	}
}

// needFrontend makes sure a browser is asked to connect: the first time a
// cell uses gonbui's comms while none is connected, the script that
// connects is shown under it; if no browser connects within frontendWait
// the cell is told why its widgets stay silent.
func (g *gonbSession) needFrontend() {
	if g.front.Connected() {
		return
	}
	c := g.e.cells.Cell()
	if c == nil {
		return
	}
	g.mu.Lock()
	if g.installed == c.Count && c.Count != 0 {
		g.mu.Unlock()
		return
	}
	g.installed = c.Count
	g.mu.Unlock()
	id := fmt.Sprintf("gonb_comm_js_%d_%d", c.Count, time.Now().UnixNano())
	g.publish(frontend.MIMEBundle{"text/html": gonb.FrontendJS(g.e.opts.KernelID)}, nil, id, false)
	go func() {
		if g.front.WaitConnected(frontendWait) {
			// The script has done its work: it is not kept in the notebook.
			g.publish(frontend.MIMEBundle{"text/html": ""}, nil, id, true)
			return
		}
		g.mu.Lock()
		warn := g.warned != c.Count
		g.warned = c.Count
		g.mu.Unlock()
		if warn && c.Running() {
			g.e.out.Stderr(commands.NoFrontend)
		}
	}()
}

// publish shows data under the running cell (or the last one).
func (g *gonbSession) publish(data frontend.MIMEBundle, md map[string]any, id string, update bool) {
	if display.Publish(data, md, id, update) {
		return
	}
	c := g.e.cells.Cell()
	if c == nil {
		return
	}
	if update {
		c.IO.UpdateDisplay(data, md, id)
	} else {
		c.IO.Display(data, md, id)
	}
}

// gonbHandler routes what gonbui sends to the cell that runs.
type gonbHandler struct{ g *gonbSession }

// perProcessIDs are the prefixes of display ids that gonbui's packages
// make once per process (package variables): in GoNB every cell is a new
// process, so each cell gets its own block. Here the process is the
// session's, so the kernel makes such an id its cell's own; otherwise a
// later cell's dom.TransientJavascript would run in the first cell's block,
// and that cell's old script would run again with it.
var perProcessIDs = []string{"gonb_transient_js_"}

// cellDisplayID is the display id under which id shows in cell n.
func cellDisplayID(id string, n int) string {
	for _, p := range perProcessIDs {
		if strings.HasPrefix(id, p) {
			return fmt.Sprintf("%s.cell%d", id, n)
		}
	}
	return id
}

func (h gonbHandler) Display(data frontend.MIMEBundle, md map[string]any, id string) {
	update := false
	if id != "" {
		if c := h.g.e.cells.Cell(); c != nil {
			id = cellDisplayID(id, c.Count)
		}
		h.g.mu.Lock()
		update = h.g.known[id]
		h.g.known[id] = true
		h.g.mu.Unlock()
	}
	h.g.publish(data, md, id, update)
}

func (h gonbHandler) RequestInput(prompt string, password bool) {
	if c := h.g.e.cells.Cell(); c != nil && c.Running() {
		c.NextInput(prompt, password)
	}
}

func (h gonbHandler) CommValue(address string, value any, request bool) {
	h.g.front.Value(address, value, request)
	h.g.needFrontend()
}

func (h gonbHandler) Subscribe(address string, unsubscribe bool) {
	h.g.front.Subscribe(address, unsubscribe)
	if !unsubscribe {
		h.g.needFrontend()
	}
}

func (h gonbHandler) Problem(err error) {
	h.g.e.out.Stderr("goaccel: " + err.Error() + "\n")
}
