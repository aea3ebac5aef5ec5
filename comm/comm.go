// Package comm lets notebook cells serve Jupyter comms: a cell registers a
// target name, and when the frontend (a widget, an extension) opens a comm
// for it, the cell's function receives the comm and can exchange messages.
//
// Like package display it talks to the kernel through a process-wide
// registry that the kernel installs once (SetRegistry); without one,
// RegisterTarget reports an error instead of pretending to work.
package comm

import (
	"errors"
	"sync"

	"github.com/goaccel/goaccel/frontend"
)

var (
	regMu    sync.RWMutex
	registry frontend.Comms
)

// SetRegistry installs the kernel's comm registry; the kernel calls it once.
func SetRegistry(c frontend.Comms) {
	regMu.Lock()
	registry = c
	regMu.Unlock()
}

func current() (frontend.Comms, error) {
	regMu.RLock()
	defer regMu.RUnlock()
	if registry == nil {
		return nil, errors.New("comm: not running inside a goaccel kernel (no comm registry)")
	}
	return registry, nil
}

// Comm is an open comm as a cell sees it.
type Comm struct {
	c frontend.Comm

	mu      sync.Mutex
	onMsg   func(data map[string]any)
	onClose func(data map[string]any)
}

// ID is the comm's id.
func (c *Comm) ID() string { return c.c.ID() }

// Target is the target name the comm was opened for.
func (c *Comm) Target() string { return c.c.Target() }

// Send sends data to the frontend (comm_msg).
func (c *Comm) Send(data map[string]any) { c.c.Send(data, nil) }

// Close closes the comm from the kernel side.
func (c *Comm) Close() { c.c.Close(nil) }

// OnMessage sets the function called with each message from the frontend.
func (c *Comm) OnMessage(f func(data map[string]any)) {
	c.mu.Lock()
	c.onMsg = f
	c.mu.Unlock()
}

// OnClose sets the function called when the frontend closes the comm.
func (c *Comm) OnClose(f func(data map[string]any)) {
	c.mu.Lock()
	c.onClose = f
	c.mu.Unlock()
}

// handler adapts a Comm to frontend.CommHandler.
type handler struct{ c *Comm }

func (h handler) OnMessage(_ frontend.Comm, data map[string]any) {
	h.c.mu.Lock()
	f := h.c.onMsg
	h.c.mu.Unlock()
	if f != nil {
		f(data)
	}
}

func (h handler) OnClose(_ frontend.Comm, data map[string]any) {
	h.c.mu.Lock()
	f := h.c.onClose
	h.c.mu.Unlock()
	if f != nil {
		f(data)
	}
}

// RegisterTarget makes target available to the frontend: each comm_open for
// it calls open with the new comm and the frontend's data.
func RegisterTarget(target string, open func(c *Comm, data map[string]any)) error {
	reg, err := current()
	if err != nil {
		return err
	}
	if target == "" {
		return errors.New("comm: empty target name")
	}
	if open == nil {
		return errors.New("comm: nil open function")
	}
	reg.RegisterTarget(target, func(fc frontend.Comm, data map[string]any) (frontend.CommHandler, error) {
		c := &Comm{c: fc}
		open(c, data)
		return handler{c}, nil
	})
	return nil
}

// UnregisterTarget removes a target; open comms stay open.
func UnregisterTarget(target string) error {
	reg, err := current()
	if err != nil {
		return err
	}
	reg.UnregisterTarget(target)
	return nil
}
