// Package dap is goaccel's debug adapter: it answers the Debug Adapter
// Protocol (DAP) requests a Jupyter frontend sends in debug_request messages
// (JEP 47), produces the DAP events the kernel publishes as debug_event, and
// drives yaegi's debugger for the cells the engine runs on the interpreter.
//
// It knows neither Jupyter's wire format (package kernel carries the JSON)
// nor the notebook's rules (package notebook decides what runs where and
// implements Host; package yaegirunner runs interpreted cells under it).
//
// # Cells and files
//
// A frontend names a cell's code by a file: tmpFilePrefix + murmur2(code,
// hashSeed) + tmpFileSuffix, parameters it reads from debugInfo (the hash is
// MurmurHash2 of the code's UTF-8 bytes, as in ipykernel and JupyterLab).
// dumpCell writes the code to that file; the engine tells the adapter the
// code of every cell (SetCellCode: those that ran before a client attached
// when it attaches, then each as it runs), so a position in cell[N] — the
// file name the engine gives cell N's code — maps to the file of that code.
// Breakpoints are kept per file and apply to every cell whose code is the
// file's.
//
// # Running under the debugger
//
// While a debug session is active, the interpreter runner (package
// yaegirunner) registers every yaegi program it compiles from cell code
// (AddProgram; those compiled before, as the session begins) and runs a
// cell's statements with Run instead of ExecuteWithContext. Run applies the
// breakpoints to the registered programs, starts yaegi's debugger and
// reports what it does: a goroutine that stops (breakpoint, step, pause)
// is a DAP thread with a "stopped" event; threads start and exit with
// "thread" events. The cell's own
// goroutine is thread 1; a goroutine started by calling a declared function
// gets the next number, but yaegi v0.16.1 counts the code of a function
// literal as the goroutine that made the literal (goaccel starts every
// goroutine of a cell through one, so they all stop as thread 1). While a
// thread is stopped the adapter answers stackTrace, scopes, variables and
// evaluate from its frames; continue, next, stepIn and stepOut resume it.
// A step moves by source line: the interpreter stops at every node, and the
// adapter steps on while the line, the function and the depth stay the same
// and over code that is not a cell's. A line breakpoint is set on the
// statement's first node to run (see nodes.go). A breakpoint's condition,
// hit condition and log message (condition.go) are judged when a thread
// arrives: one that does not stop is resumed, or, when it was stepping
// over a call, taken out of the callee to go on with its step.
//
// JupyterLab addresses every request to thread 1. A request for a thread
// that is not stopped goes to the lowest-numbered thread that is, so a
// breakpoint in a goroutine the cell started can be inspected and stepped
// from JupyterLab too.
//
// A program may hold code of several cells (the engine replays the
// declarations of compiled cells as one file): its positions then encode the
// cell in the line, EncodeLine(cell, line), which the adapter decodes.
//
// # Values
//
// Variables are presented through reflect only (see vars.go): structs,
// pointers, slices, arrays, maps and interfaces expand; a String or Error
// method of a compiled type is used for the one-line text. The evaluate
// request evaluates expressions over the stopped frame's locals and the
// session's globals without running code (see eval.go). With no cell
// stopped, inspectVariables, variables, evaluate and richInspectVariables
// read the session's variables from Host.Globals.
package dap
