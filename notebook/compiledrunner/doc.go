// Package compiledrunner is the engine's compiled runner: it runs a cell's
// Go code as compiled Go — type-checked against the session (package
// check), turned into a package (gen), built into a plugin (build) and
// loaded and run (compiled); simple cells (assignments, calls, a trailing
// expression) are evaluated without a build (eval) — and turns what a run
// gives into the cell's result values and Jupyter errors (panics read as
// Go prints them, at cell lines; os.Exit; goroutines an interrupt could
// not stop). It keeps the declaration log in step with what cells bound,
// applies a go.work beside the notebook before the first cell, and serves
// the debugger's moves of the session to the interpreter and back (Vars,
// Values, Declare).
//
// It implements session.Runner; the engine (package notebook) chooses it
// for every cell while plugins can be built here and no breakpoint asks
// for the interpreter.
package compiledrunner
