// Package gxrt is the runtime of the Go code goaccel generates from notebook
// cells: what compiled cells call into for their result, for goroutines that
// must not take the kernel down with a panic, for os.Exit and log.Fatal
// (which end the cell, not the kernel), and for interrupts.
//
// The kernel links this package and every cell plugin shares the kernel's
// copy of it, so the engine's hooks (SetHooks) reach all compiled cells. It
// is the one place where the kernel and the plugins meet, which is why its
// state is process-wide.
package gxrt

import (
	"flag"
	"fmt"
	"log"
	"os"
	"sync"
	"sync/atomic"
)

// Hooks are the engine's side of the runtime.
type Hooks struct {
	// Result receives the values of a cell's trailing expression; multi
	// reports a call returning several values.
	Result func(vals []any, multi bool)
	// GoPanic reports a panic in a goroutine a cell started, with the
	// goroutine's stack, and the cell (as Enter numbered it) the goroutine
	// belongs to.
	GoPanic func(cell int64, value any, stack []byte)
	// Exit reports os.Exit(code) (log.Fatal: 1) called by code of the cell.
	Exit func(cell int64, code int)
	// LaunchName records the name of a function handed to a launcher.
	LaunchName func(name string, fn any)
	// Input asks the frontend for a line of input for the running cell
	// (without its line break). It returns io.EOF when there is no cell to
	// ask for, and ErrInterrupted when the request ended because the cell
	// was interrupted.
	Input func() (string, error)
}

var hooks atomic.Pointer[Hooks]

// SetHooks installs the engine's hooks.
func SetHooks(h *Hooks) { hooks.Store(h) }

func current() *Hooks {
	if h := hooks.Load(); h != nil {
		return h
	}
	return &Hooks{}
}

// Symbol tables of loaded cell packages: each registers its table when its
// plugin is opened (a plugin's init runs then).
var (
	registeredMu sync.Mutex
	registered   []map[string]any
)

// Register hands the engine a cell package's symbol table.
func Register(syms map[string]any) {
	registeredMu.Lock()
	registered = append(registered, syms)
	registeredMu.Unlock()
}

// TakeRegistered returns the tables registered since the last call.
func TakeRegistered() []map[string]any {
	registeredMu.Lock()
	defer registeredMu.Unlock()
	r := registered
	registered = nil
	return r
}

// Result records the value of a cell's trailing expression.
func Result(v any) {
	if h := current(); h.Result != nil {
		h.Result([]any{v}, false)
	}
}

// Results records the values of a trailing call returning several.
func Results(vs ...any) {
	if h := current(); h.Result != nil {
		h.Result(vs, true)
	}
}

// LaunchName records the name of a launched function and returns it.
func LaunchName(name string, fn any) any {
	if h := current(); h.LaunchName != nil {
		h.LaunchName(name, fn)
	}
	return fn
}

// Ref returns a pointer to a copy of v (addresses a value that is not
// addressable).
func Ref[T any](v T) *T { return &v }

// exited is the panic value Exit leaves a goroutine with when it cannot
// park it (never seen by users).
type exited struct{}

// Exit is os.Exit for cells: it ends the cell with the code and stops the
// calling goroutine without running its deferred calls, as os.Exit does.
func Exit(code int) {
	h := current()
	if h.Exit == nil {
		os.Exit(code)
	}
	if inFinalizer() {
		panic(finalizerExit{code}) // see finalizer.go
	}
	h.Exit(CurrentCell(), code)
	// Parked for good (deferred calls must not run), and no longer one of
	// the cell's goroutines: stopping the cell does not wait for it.
	forget()
	select {}
}

// LogFatal is log.Fatal for cells.
func LogFatal(v ...any) { log.Output(2, fmt.Sprint(v...)); Exit(1) }

// LogFatalf is log.Fatalf for cells.
func LogFatalf(format string, v ...any) { log.Output(2, fmt.Sprintf(format, v...)); Exit(1) }

// LogFatalln is log.Fatalln for cells.
func LogFatalln(v ...any) { log.Output(2, fmt.Sprintln(v...)); Exit(1) }

// LoggerFatal is (*log.Logger).Fatal for cells.
func LoggerFatal(l *log.Logger, v ...any) { l.Output(2, fmt.Sprint(v...)); Exit(1) }

// LoggerFatalf is (*log.Logger).Fatalf for cells.
func LoggerFatalf(l *log.Logger, format string, v ...any) {
	l.Output(2, fmt.Sprintf(format, v...))
	Exit(1)
}

// LoggerFatalln is (*log.Logger).Fatalln for cells.
func LoggerFatalln(l *log.Logger, v ...any) { l.Output(2, fmt.Sprintln(v...)); Exit(1) }

// FlagParse is flag.Parse for cells: a bad flag or -help ends the cell
// (with flag's message and exit code 2, or 0 for -help) instead of the
// kernel.
func FlagParse() {
	flag.CommandLine.Init(flag.CommandLine.Name(), flag.ContinueOnError)
	err := flag.CommandLine.Parse(os.Args[1:])
	switch {
	case err == flag.ErrHelp:
		Exit(0)
	case err != nil:
		Exit(2)
	}
}
