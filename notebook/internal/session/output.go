package session

import (
	"sync"

	"github.com/goaccel/goaccel/frontend"
)

// Output forwards what cells write to "stdout" and "stderr" to the current
// destination: the running cell's CellIO, or the most recently started
// cell's for goroutines that outlive their cell. It does not buffer: the
// destination coalesces (the kernel's publisher batches stream text and
// sends it before any other output, keeping the order).
type Output struct {
	mu   sync.Mutex
	dest frontend.Publisher
}

// SetDest switches the destination.
func (o *Output) SetDest(p frontend.Publisher) {
	o.mu.Lock()
	o.dest = p
	o.mu.Unlock()
}

// Write sends p to the stream called name ("stdout" or "stderr").
func (o *Output) Write(name string, p []byte) {
	if len(p) == 0 {
		return
	}
	o.mu.Lock()
	dest := o.dest
	o.mu.Unlock()
	if dest != nil {
		dest.Stream(name, string(p))
	}
}

// Stderr writes s to stderr.
func (o *Output) Stderr(s string) { o.Write("stderr", []byte(s)) }

// Writer is an io.Writer onto the stream called name.
func (o *Output) Writer(name string) StreamWriter { return StreamWriter{o, name} }

// StreamWriter is an io.Writer onto one stream of an Output.
type StreamWriter struct {
	out  *Output
	name string
}

func (w StreamWriter) Write(p []byte) (int, error) {
	w.out.Write(w.name, p)
	return len(p), nil
}
