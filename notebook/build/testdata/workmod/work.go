// Package gxwork is a local module a go.work uses.
package gxwork

// Name names it.
func Name() string { return "from go.work" }
