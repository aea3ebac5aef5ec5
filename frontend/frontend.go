// Package frontend holds the small vocabulary shared by the protocol layer
// (package kernel) and everything that produces output for a notebook
// (package notebook, display, launcher, tracking): MIME bundles, the
// Publisher a running cell writes to, and the request/reply values the kernel
// exchanges with a cell interpreter.
//
// It imports nothing but the standard library so that the protocol layer never
// depends on the interpreter (yaegi) and the interpreter never depends on the
// transport (ZeroMQ): both depend on this package instead.
package frontend

import (
	"context"
	"errors"
	"strings"
)

// MIMEBundle maps a MIME type to its data, as in Jupyter's display_data:
// text types hold a string, binary types (image/png, image/jpeg) hold the
// base64 encoding as a string, and JSON types hold any JSON-encodable value.
type MIMEBundle map[string]any

// Publisher is how a running cell reaches the frontend. The kernel implements
// it on the IOPub socket (with the execute request as parent); tests implement
// it in memory. Implementations must be safe for concurrent use: goroutines a
// cell started may write at any time.
type Publisher interface {
	// Stream sends text to "stdout" or "stderr".
	Stream(name, text string)
	// Display sends display_data. A non-empty displayID lets a later
	// UpdateDisplay replace this output in place.
	Display(data MIMEBundle, metadata map[string]any, displayID string)
	// UpdateDisplay sends update_display_data for an earlier Display.
	UpdateDisplay(data MIMEBundle, metadata map[string]any, displayID string)
	// ClearOutput clears the cell's output; with wait the frontend clears
	// only when the next output arrives (no flicker).
	ClearOutput(wait bool)
}

// ErrStdinNotAllowed is returned by CellIO.Input when the frontend did not
// allow stdin for this execute request (allow_stdin false).
var ErrStdinNotAllowed = errors.New("stdin is not supported by this frontend for this request (allow_stdin is false)")

// CellIO is everything a cell can reach while it runs: output and, when the
// frontend allows it, input typed by the user.
type CellIO interface {
	Publisher
	// Input asks the frontend for a line of input (input_request on the
	// stdin channel) and blocks until the reply, ctx's end, or an error.
	Input(ctx context.Context, prompt string, password bool) (string, error)
}

// ExecuteRequest is the interpreter's view of an execute_request.
type ExecuteRequest struct {
	Code            string
	Silent          bool
	StoreHistory    bool
	AllowStdin      bool
	UserExpressions map[string]string
	// ExecutionCount is the counter the kernel assigned to this request.
	ExecutionCount int
}

// ExecuteReply is what the interpreter hands back when a cell ends. The
// kernel turns Result into execute_result and Err into an error message and
// status "error".
type ExecuteReply struct {
	// Result is the value of the cell's trailing expression, if any.
	Result         MIMEBundle
	ResultMetadata map[string]any
	// Err is non-nil when the cell failed (compile error, panic, interrupt).
	Err *Error
	// Payload carries execute_reply payloads, e.g. {"source":"page",...}.
	Payload []map[string]any
	// UserExpressions holds one entry per requested expression, each shaped
	// as the protocol wants: {"status":"ok","data":{...},"metadata":{}} or
	// {"status":"error","ename":...,"evalue":...,"traceback":[...]}.
	UserExpressions map[string]any
}

// Error is a failed cell: the fields of Jupyter's error message.
type Error struct {
	Name      string   // ename, e.g. "CompileError", "panic", "Interrupted"
	Value     string   // evalue: one line that says what went wrong
	Traceback []string // lines shown to the user (may hold ANSI colour)
}

func (e *Error) Error() string {
	if len(e.Traceback) > 0 {
		return e.Name + ": " + e.Value + "\n" + strings.Join(e.Traceback, "\n")
	}
	return e.Name + ": " + e.Value
}

// Completion answers a complete_request. Cursor positions count Unicode code
// points, as Jupyter protocol 5.2+ does.
type Completion struct {
	Matches     []string
	CursorStart int
	CursorEnd   int
	Metadata    map[string]any
}

// Inspection answers an inspect_request.
type Inspection struct {
	Found    bool
	Data     MIMEBundle
	Metadata map[string]any
}

// Completeness is the status of an is_complete_request.
type Completeness string

// The statuses of is_complete_reply.
const (
	Complete   Completeness = "complete"
	Incomplete Completeness = "incomplete"
	Invalid    Completeness = "invalid"
	Unknown    Completeness = "unknown"
)

// LanguageInfo describes the cell language for kernel_info_reply.
type LanguageInfo struct {
	Name              string // "go"
	Version           string
	MIMEType          string // "text/x-go"
	FileExtension     string // ".go"
	PygmentsLexer     string
	CodeMirrorMode    string
	NBConvertExporter string
}

// HelpLink is one entry of kernel_info_reply's help_links.
type HelpLink struct {
	Text string `json:"text"`
	URL  string `json:"url"`
}

// Comm is one end of a Jupyter comm, as seen by code in the kernel.
type Comm interface {
	ID() string
	Target() string
	// Send sends comm_msg to the frontend.
	Send(data map[string]any, metadata map[string]any)
	// Close sends comm_close and forgets the comm.
	Close(data map[string]any)
}

// CommHandler receives what the frontend sends on an open comm.
type CommHandler interface {
	OnMessage(c Comm, data map[string]any)
	OnClose(c Comm, data map[string]any)
}

// CommOpener is called when the frontend opens a comm for a registered target;
// it returns the handler for the comm's later messages, or an error to refuse
// (the kernel then closes the comm).
type CommOpener func(c Comm, data map[string]any) (CommHandler, error)

// Comms is the kernel's comm registry as offered to interpreters and cells.
type Comms interface {
	RegisterTarget(target string, open CommOpener)
	UnregisterTarget(target string)
	// Open starts a comm from the kernel side (comm_open on IOPub).
	Open(target string, data map[string]any, metadata map[string]any) (Comm, error)
}
