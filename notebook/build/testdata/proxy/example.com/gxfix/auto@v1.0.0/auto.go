// Package auto is a fixture module that a cell imports without %go get.
package auto

// Answer answers.
func Answer() int { return 42 }
