package session

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/goaccel/goaccel/frontend"
)

// Cell is a running cell (or the last one that ran) as the runners and the
// runtime hooks of cell code see it.
type Cell struct {
	// Ctx ends when the cell ends or is stopped (interrupt, recursion
	// guard).
	Ctx context.Context
	// Stopped is closed when the cell is stopped while it runs; unlike
	// Ctx, it stays open when the cell simply ends (a goroutine it left
	// running must then sleep its full time).
	Stopped <-chan struct{}
	// IO is the cell's output and input.
	IO frontend.CellIO
	// AllowStdin says whether the frontend may be asked for input.
	AllowStdin bool
	// Count is the cell's execution count (0 for code that is no cell of
	// the notebook's, such as a user expression's).
	Count int

	cancel   context.CancelFunc
	finished chan struct{}

	// BeforeStdin, when set, runs before each read of standard input
	// asks the frontend (the engine handles what gonbui sent first).
	BeforeStdin func()

	mu      sync.Mutex
	done    bool
	stopErr *frontend.Error
	// the prompt of the next read of standard input (NextInput)
	prompt   string
	password bool
}

// NewCell starts a cell: its context is derived from ctx, and Stopped
// closes when that context ends while the cell runs. End ends it.
func NewCell(ctx context.Context, io frontend.CellIO, allowStdin bool, count int) *Cell {
	ctx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	c := &Cell{Ctx: ctx, Stopped: stopped, IO: io, AllowStdin: allowStdin, Count: count,
		cancel: cancel, finished: make(chan struct{})}
	go func() {
		select {
		case <-ctx.Done():
			if c.Running() {
				close(stopped)
			}
		case <-c.finished:
		}
	}()
	return c
}

// End marks the cell done and releases its context.
func (c *Cell) End() {
	c.mu.Lock()
	c.done = true
	c.mu.Unlock()
	close(c.finished)
	c.cancel()
}

// Running reports whether the cell has not ended yet.
func (c *Cell) Running() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.done
}

// Stop stops the running cell the way an interrupt does; the cell's error
// is then err instead of the interrupt's (see StopError).
func (c *Cell) Stop(err *frontend.Error) {
	c.mu.Lock()
	c.stopErr = err
	c.mu.Unlock()
	c.cancel()
}

// StopError is the error Stop was given, nil when the cell was not stopped
// by Stop.
func (c *Cell) StopError() *frontend.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopErr
}

// Ask requests a line of input from the frontend for this cell.
func (c *Cell) Ask(prompt string, password bool) (string, error) {
	if !c.AllowStdin {
		return "", errStdin(frontend.ErrStdinNotAllowed)
	}
	s, err := c.IO.Input(c.Ctx, prompt, password)
	if err != nil {
		return "", errStdin(err)
	}
	return s, nil
}

// NextInput sets the prompt of the next read of standard input, and
// whether what is typed is hidden (gonbui.RequestInput announces a read).
func (c *Cell) NextInput(prompt string, password bool) {
	c.mu.Lock()
	c.prompt, c.password = prompt, password
	c.mu.Unlock()
}

// AskStdin requests a line of standard input for the cell: with the
// prompt NextInput set, if any (used once).
func (c *Cell) AskStdin() (string, error) {
	if c.BeforeStdin != nil {
		c.BeforeStdin()
	}
	c.mu.Lock()
	prompt, password := c.prompt, c.password
	c.prompt, c.password = "", false
	c.mu.Unlock()
	return c.Ask(prompt, password)
}

// errStdin wraps a refused input request.
func errStdin(err error) error { return fmt.Errorf("notebook: reading input: %w", err) }

// Current is the session's running cell, or the last one that ran, which
// output and panics of goroutines that outlive their cell go to.
type Current struct {
	cell   atomic.Pointer[Cell]
	mu     sync.Mutex
	starts []func(*Cell)
}

// Cell returns the running cell, or the last one; nil before the first.
func (cc *Current) Cell() *Cell { return cc.cell.Load() }

// Start makes c the current cell and calls the OnStart functions with it.
func (cc *Current) Start(c *Cell) {
	cc.cell.Store(c)
	cc.mu.Lock()
	starts := cc.starts
	cc.mu.Unlock()
	for _, f := range starts {
		f(c)
	}
}

// OnStart registers f to be called as each cell starts (a runner resets
// its per-cell state there).
func (cc *Current) OnStart(f func(*Cell)) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.starts = append(cc.starts, f)
}
