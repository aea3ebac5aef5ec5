// Package session is what the engine (package notebook) and the runners it
// chooses between (packages compiledrunner and yaegirunner) share about one
// notebook session: the Runner contract, the declaration log (Log), the
// running cell (Cell, Current) and the stream cells write to (Output).
//
// It is internal to the notebook: the runners and the launch payloads
// (package launch) read and write this state, the engine owns it.
package session
