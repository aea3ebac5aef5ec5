// Running other programs with os/exec: output, stdin, pipes and failures.
package main

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

func main() {
	out, err := exec.Command("echo", "hello", "from", "echo").Output()
	fmt.Printf("%q %v\n", out, err)

	cmd := exec.Command("tr", "a-z", "A-Z")
	cmd.Stdin = strings.NewReader("shout this")
	out, err = cmd.Output()
	fmt.Printf("%q %v\n", out, err)

	both, err := exec.Command("sh", "-c", "echo out; echo err 1>&2").CombinedOutput()
	fmt.Printf("%q %v\n", both, err)

	err = exec.Command("sh", "-c", "exit 3").Run()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		fmt.Println("exit code:", exitErr.ExitCode())
	}

	_, err = exec.Command("no-such-program-here").Output()
	fmt.Println(errors.Is(err, exec.ErrNotFound))

	wc := exec.Command("wc", "-l")
	in, _ := wc.StdinPipe()
	outPipe, _ := wc.StdoutPipe()
	if err := wc.Start(); err != nil {
		panic(err)
	}
	io.WriteString(in, "one\ntwo\nthree\n")
	in.Close()
	count, _ := io.ReadAll(outPipe)
	fmt.Println("lines:", strings.TrimSpace(string(count)), wc.Wait())

	path, err := exec.LookPath("sh")
	fmt.Println(path != "", err)
}
