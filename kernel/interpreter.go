package kernel

import (
	"context"
	"encoding/json"

	"github.com/goaccel/goaccel/frontend"
)

// Interpreter is everything the protocol layer needs from a cell language.
// The kernel never sees how cells run; package notebook implements this on
// yaegi, and tests implement it in memory.
//
// Execute is called from one goroutine at a time (the execution queue), and
// ctx is cancelled on interrupt_request or SIGINT. The other methods may be
// called while a cell runs (completion from a second notebook view) and must
// be safe for that.
type Interpreter interface {
	// Info describes the language for kernel_info_reply.
	Info() (lang frontend.LanguageInfo, banner string, help []frontend.HelpLink)
	// Execute runs one cell. Output goes to io while the cell runs.
	Execute(ctx context.Context, req frontend.ExecuteRequest, io frontend.CellIO) frontend.ExecuteReply
	// Complete and Inspect take cursor positions in Unicode code points.
	Complete(ctx context.Context, code string, cursor int) (frontend.Completion, error)
	Inspect(ctx context.Context, code string, cursor int, detail int) (frontend.Inspection, error)
	// IsComplete reports whether code is ready to run and, when incomplete,
	// the indent for the next line.
	IsComplete(ctx context.Context, code string) (status frontend.Completeness, indent string)
	// Close releases the interpreter; called once, on shutdown.
	Close() error
}

// CommUser is implemented by interpreters that let cells open and serve comms.
// The kernel calls SetComms once, before the first request.
type CommUser interface {
	SetComms(frontend.Comms)
}

// Debugger is implemented by interpreters that can be debugged (JEP 47).
// The kernel then answers kernel_info with "debugger": true and hands each
// debug_request's content, a Debug Adapter Protocol request, to
// HandleDebug. The kernel calls SetDebugEvents once, before the first
// request.
//
// HandleDebug is called on the control channel's goroutine, possibly while
// a cell runs (or is stopped at a breakpoint): it must not wait for the
// cell.
type Debugger interface {
	// HandleDebug answers one DAP request with its response (the
	// debug_reply's content) and the events to publish (as debug_event)
	// after the reply.
	HandleDebug(ctx context.Context, request json.RawMessage) (response json.RawMessage, events []json.RawMessage)
	// SetDebugEvents gives the interpreter where events go that no request
	// causes (a cell stopped at a breakpoint): each is published as a
	// debug_event.
	SetDebugEvents(publish func(event json.RawMessage))
}
