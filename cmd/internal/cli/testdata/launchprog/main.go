// Command launchprog is a plain Go program for `goaccel launch` tests: it
// joins the process group through accelerate.NewAccelerator, all-reduces
// its rank, and prints what it got. FAIL_RANK=R makes rank R exit with
// status 3 and the others wait for good (the launcher must stop them).
// With FSDP on, each rank also prints the plugin it was launched with.
package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/goaccel/goaccel/accelerate"
)

func main() {
	acc, err := accelerate.NewAccelerator()
	if err != nil {
		fmt.Fprintln(os.Stderr, "NewAccelerator:", err)
		os.Exit(1)
	}
	sum, err := acc.Reduce([]float64{float64(acc.ProcessIndex() + 1)}, "sum")
	if err != nil {
		fmt.Fprintln(os.Stderr, "Reduce:", err)
		os.Exit(1)
	}
	fmt.Printf("rank %d of %d: sum %v, args %q, mixed precision %s\n", acc.ProcessIndex(), acc.NumProcesses(), sum[0], os.Args[1:], os.Getenv("ACCELERATE_MIXED_PRECISION"))
	if p := acc.FSDPPlugin(); p != nil {
		fmt.Printf("rank %d: %s %v\n", acc.ProcessIndex(), acc.DistributedType(), p)
	}
	if fail := os.Getenv("FAIL_RANK"); fail != "" {
		if fail == strconv.Itoa(acc.ProcessIndex()) {
			fmt.Fprintln(os.Stderr, "failing on purpose")
			os.Exit(3)
		}
		select {}
	}
}
