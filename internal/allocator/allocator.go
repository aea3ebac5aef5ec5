// Package allocator makes goaccel's kernel and node agents run with
// tcmalloc as the C allocator when the machine has it, by re-executing
// the process with LD_PRELOAD set (the allocator must be in place before
// the program starts; launched workers inherit it).
//
// Why: XLA's CPU runtime (GoMLX's backend) allocates and frees its large
// buffers at every step. glibc's malloc hands that memory back to the
// kernel and takes it again, and on the example CNN the page faults cost
// more than a third of every step (1.46 M minor faults and 3.5 s of system
// time for 35 steps); with tcmalloc, which keeps freed memory, the same run
// takes 0.31 M faults and 0.8 s, and trains 1.6× faster (bench/gomlx). Go
// code does not allocate with malloc, so nothing else changes.
package allocator

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Env turns the preload off ("0").
const Env = "GOACCEL_TCMALLOC"

// libraries are where Debian, Ubuntu and Fedora put tcmalloc
// (libtcmalloc-minimal4, gperftools-libs).
var libraries = []string{
	"/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4",
	"/usr/lib/aarch64-linux-gnu/libtcmalloc_minimal.so.4",
	"/usr/lib64/libtcmalloc_minimal.so.4",
	"/usr/lib/libtcmalloc_minimal.so.4",
}

// Find returns the tcmalloc library to preload, "" when there is none or
// the user turned it off.
func Find() string {
	if os.Getenv(Env) == "0" {
		return ""
	}
	for _, l := range libraries {
		if fi, err := os.Stat(l); err == nil && !fi.IsDir() {
			return l
		}
	}
	return ""
}

// Preloaded reports whether lib is already in LD_PRELOAD.
func Preloaded(lib string) bool {
	for _, p := range strings.FieldsFunc(os.Getenv("LD_PRELOAD"), func(r rune) bool { return r == ':' || r == ' ' }) {
		if p == lib || filepath.Base(p) == filepath.Base(lib) {
			return true
		}
	}
	return false
}

// Reexec replaces the process with itself, tcmalloc preloaded, when it is
// found and not loaded yet; it returns only when there is nothing to do
// or the exec failed (the process then goes on with glibc's allocator).
func Reexec() error {
	lib := Find()
	if lib == "" || Preloaded(lib) {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	pre := lib
	if cur := os.Getenv("LD_PRELOAD"); cur != "" {
		pre = lib + ":" + cur
	}
	env := append(os.Environ(), "LD_PRELOAD="+pre)
	return syscall.Exec(exe, os.Args, env)
}
