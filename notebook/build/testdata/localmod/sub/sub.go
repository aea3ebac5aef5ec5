// Package sub imports its module's root package.
package sub

import "example.com/gxlocal"

// Hello says hello through the root package.
func Hello() string { return "sub of " + gxlocal.Hello() }
