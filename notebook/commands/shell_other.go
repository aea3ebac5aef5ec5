//go:build !unix

package commands

import "os/exec"

// killGroupOnCancel keeps exec.CommandContext's default (kill the shell).
func killGroupOnCancel(*exec.Cmd) {}
