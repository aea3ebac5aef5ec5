//go:build !unix

package proc

import "os/exec"

// isolate leaves cmd as it is: without process groups, cancelling kills
// the child alone (exec.CommandContext's default).
func isolate(*exec.Cmd) {}

func reap(*exec.Cmd) {}
