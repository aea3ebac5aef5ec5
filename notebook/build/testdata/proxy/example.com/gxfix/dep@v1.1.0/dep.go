// Package dep is a fixture module served by a file-based proxy.
package dep

// Version says which version of the module this is.
func Version() string { return "dep v1.1.0" }
