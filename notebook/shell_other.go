//go:build !unix

package notebook

import "os/exec"

// killGroupOnCancel keeps exec.CommandContext's default (kill the shell).
func killGroupOnCancel(*exec.Cmd) {}
