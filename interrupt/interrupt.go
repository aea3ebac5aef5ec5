// Package interrupt gives library code that notebook cells call places
// where an interrupted cell stops: Point, called by a training loop
// between two steps or by an evaluation between two batches, unwinds the
// calling goroutine when it belongs to a cell the user interrupted, and
// returns at once otherwise (and outside a kernel, and in launched workers,
// whose processes the launcher stops).
//
// The kernel installs the check (SetCheck) once per process; like
// packages display and input, this package holds that one process-wide
// hook. The unwinding is a panic whose value satisfies Unwinding: code
// that recovers panics to return them as errors must let it go on
// (Repanic), or the cell would carry on with an error in hand instead of
// stopping.
package interrupt

import "sync/atomic"

// Unwinding is the panic value of an interrupted cell's goroutine.
type Unwinding interface {
	error
	// CellInterrupted marks the value; it does nothing.
	CellInterrupted()
}

var check atomic.Pointer[func()]

// SetCheck installs f as the check Point runs and returns what restores
// the previous one. f panics with an Unwinding value in a goroutine of an
// interrupted cell and returns otherwise; it must be cheap (Point runs at
// every training step).
func SetCheck(f func()) (restore func()) {
	old := check.Swap(&f)
	return func() { check.Store(old) }
}

// Point is a safe point: it unwinds the calling goroutine if it belongs
// to an interrupted cell. Call it where every piece of state the caller
// keeps is whole (between two training steps, not between the updates of
// one step's variables).
func Point() {
	if f := check.Load(); f != nil {
		(*f)()
	}
}

// IsUnwinding reports whether a recovered panic value is an interrupted
// cell's unwinding.
func IsUnwinding(v any) bool {
	_, ok := v.(Unwinding)
	return ok
}

// Repanic panics again with v when it is an unwinding; code that recovers
// panics calls it first.
func Repanic(v any) {
	if IsUnwinding(v) {
		panic(v)
	}
}
