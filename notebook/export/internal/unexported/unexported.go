// Package unexported is a fixture of package export's tests: a function
// whose result has a type its package does not export, as some libraries'
// constructors do.
package unexported

type counter struct{ n int }

// Inc counts one more and returns the count.
func (c *counter) Inc() int { c.n++; return c.n }

// New returns a counter, whose type cannot be written outside.
func New() *counter { return &counter{} }
