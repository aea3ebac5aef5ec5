// syscall.Exec replaces the running process with another program; nothing
// after it runs. (In a kernel that would replace the kernel: an engine has
// to refuse it or run it elsewhere.)
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

func main() {
	binary, err := exec.LookPath("echo")
	if err != nil {
		panic(err)
	}
	fmt.Println("about to exec", len(binary) > 0)
	os.Stdout.Sync()
	err = syscall.Exec(binary, []string{"echo", "replaced", "by", "echo"}, os.Environ())
	panic(err)
}
