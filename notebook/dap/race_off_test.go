//go:build !race

package dap

const raceEnabled = false
