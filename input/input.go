// Package input lets notebook cells (and compiled code running under a cell)
// ask the user for a line of text or a password through the frontend's stdin
// channel (Jupyter's input_request), the way Python's input() and getpass()
// do in a notebook.
//
// Like package display, input goes through one process-wide Source that the
// kernel installs for each running cell. With no source installed, Line and
// Password return ErrNoSource.
package input

import (
	"errors"
	"sync"
)

// Source asks the frontend for a line; password hides what is typed.
type Source func(prompt string, password bool) (string, error)

// ErrNoSource is returned when no cell is running under a kernel.
var ErrNoSource = errors.New("input: no frontend to ask (not running in a notebook cell)")

var (
	mu     sync.RWMutex
	source Source
)

// SetSource installs src as the destination of Line and Password and returns
// a function that restores the previous one.
func SetSource(src Source) (restore func()) {
	mu.Lock()
	prev := source
	source = src
	mu.Unlock()
	return func() {
		mu.Lock()
		source = prev
		mu.Unlock()
	}
}

func ask(prompt string, password bool) (string, error) {
	mu.RLock()
	src := source
	mu.RUnlock()
	if src == nil {
		return "", ErrNoSource
	}
	return src(prompt, password)
}

// Line shows prompt and returns the line the user typed (without newline).
func Line(prompt string) (string, error) { return ask(prompt, false) }

// Password is Line with the typed text hidden.
func Password(prompt string) (string, error) { return ask(prompt, true) }
