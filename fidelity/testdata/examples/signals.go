// Receiving a signal through a channel with os/signal. The program sends
// SIGUSR1 to itself, so the run is self-contained.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGUSR2)
	defer signal.Stop(sigs)

	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		panic(err)
	}
	select {
	case s := <-sigs:
		fmt.Println("received", s)
	case <-time.After(5 * time.Second):
		fmt.Println("no signal")
	}
	fmt.Println("exiting normally")
}
