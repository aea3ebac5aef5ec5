//go:build race

package dap

// raceEnabled is true under the race detector.
const raceEnabled = true
