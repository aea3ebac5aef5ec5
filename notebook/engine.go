package notebook

import (
	"errors"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/goaccel/goaccel/comm"
	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook/build"
	"github.com/goaccel/goaccel/notebook/commands"
	"github.com/goaccel/goaccel/notebook/compiledrunner"
	"github.com/goaccel/goaccel/notebook/dap"
	"github.com/goaccel/goaccel/notebook/fdcapture"
	"github.com/goaccel/goaccel/notebook/gonb"
	"github.com/goaccel/goaccel/notebook/internal/session"
	"github.com/goaccel/goaccel/notebook/launch"
	"github.com/goaccel/goaccel/notebook/yaegirunner"
)

// Options configure an Engine.
type Options struct {
	// Capture, when set, is an active redirection of fds 1 and 2 (see
	// package fdcapture); the engine forwards what it captures to the
	// running cell. Without it, os.Stdout writes from cells go to the
	// process's real stdout.
	Capture *fdcapture.Capture
	// Symbols are extra compiled packages cells may import, in the shape of
	// stdlib.Symbols ("import/path/name" → symbol → value), e.g. the
	// tables of package symbols. display, input and the standard library
	// are always available.
	Symbols []map[string]map[string]reflect.Value
	// Version is reported in Info (the goaccel version).
	Version string
	// Interpret runs every cell on the interpreter instead of compiling
	// declarations with the Go toolchain.
	Interpret bool
	// BuildCache is where compiled cells are cached
	// (~/.cache/goaccel/build by default).
	BuildCache string
	// AlwaysBuild builds every cell with the toolchain, also the simple
	// ones (assignments, calls, a trailing expression) that are otherwise
	// evaluated without a build (package eval).
	AlwaysBuild bool
	// KernelID is the id Jupyter gave the kernel (GoNB's
	// GONB_JUPYTER_KERNEL_ID; the browser's end of gonbui's comms needs
	// it), "" when unknown.
	KernelID string
}

// DeclKind is the kind of a logged declaration.
type DeclKind = session.DeclKind

// The kinds of declarations.
const (
	KindImport = session.KindImport
	KindType   = session.KindType
	KindFunc   = session.KindFunc
	KindMethod = session.KindMethod
	KindConst  = session.KindConst
	KindVar    = session.KindVar
)

// Declaration is one entry of the declaration log: something a cell
// declared that succeeded (see session.Declaration).
type Declaration = session.Declaration

// Engine runs Go notebook cells: compiled, or on the interpreter. Its
// methods are safe for concurrent use; Execute calls are serialized.
type Engine struct {
	opts Options

	execMu sync.Mutex // one Execute at a time

	mu     sync.RWMutex // guards closed
	closed bool

	// the session the runners share (package session)
	log   *session.Log
	out   session.Output
	cells session.Current

	packages *yaegirunner.Packages

	// launches carries launched functions to the workers (launches.go)
	launches *launch.Session

	// the runners: compiled is nil when cells cannot be compiled here
	// (compErr says why); interp is always there (the debugger needs it).
	compiled *compiledrunner.Runner
	compErr  error
	// cmds are the cells' commands (package commands).
	cmds   *commands.Registry
	interp *yaegirunner.Runner
	// interpNoted: the user was told that cells are interpreted.
	interpNoted bool

	// the debugger (debug.go)
	dbg       *dap.Adapter
	debugging atomic.Bool // a debug session is active (a client attached)
	dbgState  debugState  // guarded by execMu
	// interpDebugged: the interpreter runner has the adapter (guarded by
	// execMu; see syncDebugger).
	interpDebugged bool
	codeMu         sync.Mutex
	codes          map[int]string // each cell's code, by execution count

	// gonb is what GoNB's notebooks need (gonbui.go)
	gonb *gonbSession
}

// New starts an engine with a fresh session.
func New(opts Options) (*Engine, error) {
	e := &Engine{opts: opts, log: session.NewLog(), codes: map[int]string{}, cmds: commands.New()}
	e.packages = yaegirunner.NewPackages(opts.Symbols)
	e.startCompiled()
	interp, err := yaegirunner.New(yaegirunner.Options{
		Packages: e.packages, Log: e.log, Output: &e.out, Cells: &e.cells,
		Launches: launchHooks{e}, CompiledUnavailable: e.compReason(),
	})
	if err != nil {
		return nil, err
	}
	e.interp = interp
	lo := launch.Options{Log: e.log, Interpreted: interp, Execute: e.Execute, Note: e.noteLaunch}
	if e.compiled != nil {
		lo.Compiled = e.compiled
	}
	e.launches = launch.New(lo)
	e.dbg = dap.New(dap.Options{Host: debugHost{e}, TypeName: interp.TypeName})
	// Cells see a program started without arguments, as go run starts it,
	// not the kernel's command line (%args gives them some).
	commands.FreshFlags()
	commands.SetArgs(nil)
	e.startGonb()
	if opts.Capture != nil {
		opts.Capture.SetOutput(func(stream string, p []byte) {
			if stream == "stderr" {
				p = yaegirunner.StripNoise(p)
			}
			e.out.Write(stream, p)
		})
	}
	return e, nil
}

// startCompiled prepares compiled cells, or records why they are
// unavailable (cells are then interpreted).
func (e *Engine) startCompiled() {
	if e.opts.Interpret {
		e.compErr = errors.New("interpretation was asked for")
		return
	}
	r, err := compiledrunner.New(compiledrunner.Options{
		BuildCache: e.opts.BuildCache, AlwaysBuild: e.opts.AlwaysBuild,
		Symbols: e.packages.Linked(), AutoImport: e.packages.AutoImport,
		Log: e.log, Output: &e.out, Cells: &e.cells,
		GoPanics:   func(c *session.Cell) *frontend.Error { return e.interp.GoPanicError(c) },
		LaunchName: func(name string, fn any) { e.launches.Name(name, fn) },
		Flush:      e.flushOutput,
	})
	if err != nil {
		e.compErr = err
		return
	}
	e.compiled = r
}

// reset forgets every declaration and value (%reset).
func (e *Engine) reset() error {
	if err := e.interp.Reset(); err != nil {
		return err
	}
	if e.compiled != nil {
		if err := e.compiled.Reset(); err != nil {
			return err
		}
	}
	e.log.Reset()
	return nil
}

// Info describes the language for kernel_info_reply.
func (e *Engine) Info() (frontend.LanguageInfo, string, []frontend.HelpLink) {
	v := strings.TrimPrefix(runtime.Version(), "go")
	banner := "goaccel " + e.opts.Version + " — Go " + v + " cells on yaegi v0.16.1 (type %help for magics)"
	return frontend.LanguageInfo{
			Name:              "go",
			Version:           v,
			MIMEType:          "text/x-go",
			FileExtension:     ".go",
			PygmentsLexer:     "go",
			CodeMirrorMode:    "go",
			NBConvertExporter: "script",
		}, banner, []frontend.HelpLink{
			{Text: "Go documentation", URL: "https://go.dev/doc/"},
			{Text: "Go standard library", URL: "https://pkg.go.dev/std"},
			{Text: "yaegi", URL: "https://github.com/traefik/yaegi"},
		}
}

// Close releases the engine. Goroutines cells started cannot be stopped
// from outside and keep running until the process exits.
func (e *Engine) Close() error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	if e.opts.Capture != nil {
		e.opts.Capture.SetOutput(nil)
	}
	e.gonb.close()
	err := e.dbg.Close()
	if e.compiled != nil {
		if cerr := e.compiled.Close(); cerr != nil {
			return cerr
		}
	}
	return err
}

// Declarations returns a copy of the declaration log, oldest first; a name
// declared again appears once, at its latest position.
func (e *Engine) Declarations() []Declaration { return e.log.Declarations() }

// Imports maps the local name of each package imported by cells to its path.
func (e *Engine) Imports() map[string]string { return e.log.Imports() }

// SetComms lets cells serve Jupyter comms through package comm
// (kernel.CommUser).
func (e *Engine) SetComms(c frontend.Comms) {
	comm.SetRegistry(c)
	if e.gonb != nil && e.gonb.front != nil {
		c.RegisterTarget(gonb.CommTarget, e.gonb.front.Open)
	}
}

// compReason says why compiled cells are unavailable.
func (e *Engine) compReason() string {
	var u *build.Unavailable
	if errors.As(e.compErr, &u) {
		return u.Reason
	}
	if e.compErr == nil {
		return "unknown"
	}
	return e.compErr.Error()
}
