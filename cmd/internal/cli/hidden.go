package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"reflect"
	"syscall"

	"github.com/sirupsen/logrus"

	"github.com/goaccel/goaccel/accelerate"
	"github.com/goaccel/goaccel/gpu"
	"github.com/goaccel/goaccel/launcher"
	"github.com/goaccel/goaccel/notebook"
	"github.com/goaccel/goaccel/symbols"
)

// runHidden runs the roles users never type: the launcher's worker. It
// reports whether args named one.
func runHidden(args []string, stderr io.Writer) (int, bool) {
	if args[0] != launcher.WorkerSubcommand {
		return 0, false
	}
	logrus.SetFormatter(cellLogFormatter{})
	engine, err := notebook.New(notebook.Options{
		Symbols:   []map[string]map[string]reflect.Value{symbols.Symbols},
		Version:   versionString(),
		Interpret: interpretRequested(),
	})
	if err != nil {
		fmt.Fprintf(stderr, "goaccel worker: starting the Go interpreter: %v\n", err)
		return 1, true
	}
	defer engine.Close()
	// The launcher stops workers with SIGINT, then SIGTERM: both cancel the
	// running function.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return launcher.WorkerMain(ctx, engine), true
}

// installLaunchProbes tells the launcher, in the kernel process, how to find
// GPUs and whether an Accelerator or a device was already set up here.
func installLaunchProbes() {
	launcher.SetProbes(launcher.Probes{
		GPUs: func() ([]launcher.GPU, error) {
			devs, err := gpu.Discover()
			if err != nil {
				if errors.Is(err, gpu.ErrNoGPU) {
					return nil, nil
				}
				return nil, err
			}
			out := make([]launcher.GPU, 0, len(devs))
			for _, d := range devs {
				out = append(out, launcher.GPU{Index: d.Index, UUID: d.UUID, Name: d.Name})
			}
			return out, nil
		},
		AcceleratorInitialized: accelerate.StateInitialized,
		DeviceBound: func() bool {
			bound, _ := gpu.BoundInKernel()
			return bound
		},
	})
}

// interpretRequested reports whether GOACCEL_INTERPRET=1 asks for cells on
// the interpreter instead of compiled (workers inherit it from the kernel).
func interpretRequested() bool { return os.Getenv("GOACCEL_INTERPRET") == "1" }
