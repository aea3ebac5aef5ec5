// Package plugin registers itself in its init: importing it for its side
// effect (import _) is the only way to use it.
package plugin

import "example.com/gxregistry"

func init() { registry.Register("plugin") }
