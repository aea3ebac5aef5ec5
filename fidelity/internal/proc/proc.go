// Package proc starts the harness's child processes so that a timeout ends
// them and everything they started: each child leads its own process group,
// and cancelling its context kills the whole group.
package proc

import (
	"os/exec"
	"time"
)

// waitDelay bounds how long Wait waits for output pipes held open by
// grandchildren after the child itself ended.
const waitDelay = 2 * time.Second

// Isolate prepares cmd (made with exec.CommandContext) to run in its own
// process group, killed as a whole when the context ends.
func Isolate(cmd *exec.Cmd) {
	cmd.WaitDelay = waitDelay
	isolate(cmd)
}

// Reap kills what is left of cmd's process group after cmd ended (programs
// the child started and did not wait for). It does nothing when the group
// is already gone.
func Reap(cmd *exec.Cmd) {
	if cmd.Process != nil {
		reap(cmd)
	}
}
