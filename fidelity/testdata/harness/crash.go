// crash.go has its process killed. Under go run that is the program's own
// process; as a cell it is the kernel, whatever the engine: the harness must
// count a kernel death and carry on. (A shell does the killing: engines may
// refuse to let a cell signal its own process directly.)
package main

import (
	"fmt"
	"os"
	"os/exec"
	"time"
)

func main() {
	fmt.Println("about to crash")
	cmd := exec.Command("sh", "-c", "kill -KILL $PPID")
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "kill:", err)
		os.Exit(1)
	}
	time.Sleep(10 * time.Second) // SIGKILL is not instantaneous
	fmt.Println("still alive")
}
