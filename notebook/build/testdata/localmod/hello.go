// Package gxlocal is a local module that tests use with %use.
package gxlocal

// Hello says which version of the source this is.
func Hello() string { return "v1" }

// Counter counts.
type Counter struct{ N int }

// Inc adds one.
func (c *Counter) Inc() int { c.N++; return c.N }
