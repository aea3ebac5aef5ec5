package session

import (
	"context"
	"errors"
	"reflect"

	"github.com/goaccel/goaccel/frontend"
)

// Runner is one way to run the Go code of cells: compiled into plugins
// (package compiledrunner) or on the yaegi interpreter (package
// yaegirunner). The engine picks a runner for each cell; the runner keeps
// the declaration log in step with what the cells it ran declared.
type Runner interface {
	// Run runs code, the Go code of cell c (its magics taken out), and
	// returns its result: nil when the cell has no trailing expression.
	Run(ctx context.Context, c *Cell, code string) (*Result, *frontend.Error)
	// Evaluate evaluates one expression (execute_request's
	// user_expressions) against the session, binding nothing.
	Evaluate(ctx context.Context, c *Cell, expr string) (*Result, *frontend.Error)
	// Values lists the session's variables with their current values.
	Values() []Var
	// Reset forgets every declaration and value (%reset).
	Reset() error
	// Close releases what the runner holds.
	Close() error
}

// Result is the value of a cell's trailing expression.
type Result struct {
	// Values are the expression's values for the engine to format (as
	// fmt prints them, with the MIME types their methods offer); Multi
	// means they are a call's several results, shown as a list.
	Values []any
	Multi  bool
	// Bundle, when not nil, is the result already formatted: values of
	// interpreted types are formatted inside the interpreter, whose
	// methods compiled code cannot call.
	Bundle frontend.MIMEBundle
}

// Var is a session variable.
type Var struct {
	Name string
	// Type is the variable's type as a cell writes it ("" when the runner
	// leaves it to reflect).
	Type  string
	Value reflect.Value
}

// ErrInterrupted is the error of an interrupted cell.
func ErrInterrupted() *frontend.Error {
	return &frontend.Error{
		Name:      "Interrupted",
		Value:     "interrupted by the user; the state of earlier cells is kept",
		Traceback: []string{"Interrupted: the cell was stopped by an interrupt (variables and declarations of earlier cells are kept)"},
	}
}

// IsCanceled reports an error of a context that was cancelled or timed out.
func IsCanceled(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
