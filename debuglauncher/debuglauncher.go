// Package debuglauncher is Accelerate's debug_launcher for Go notebooks:
// it runs a training function in several CPU worker processes, for testing
// and debugging distributed code on a machine without GPUs.
//
//	results, err := debuglauncher.DebugLauncher(train, []any{0.01}, 2)
//
// Each worker is a fresh process started by package launcher (see its
// documentation for how the function reaches the worker and how output,
// displays, failures and interrupts are handled). Compared with Accelerate:
//
//   - every rank gets a correct RANK and LOCAL_RANK (Accelerate leaves
//     LOCAL_RANK unset, so every rank believes it is local rank 0);
//   - ACCELERATE_USE_CPU=yes and ACCELERATE_MIXED_PRECISION=no are set, and
//     CUDA_VISIBLE_DEVICES is empty, so the workers never touch a GPU;
//   - the rendezvous store listens on a free port of 127.0.0.1 instead of a
//     fixed 29500, so two debug launches never collide;
//   - each rank's return values come back, in rank order;
//   - nothing is printed besides the workers' own output (prefixed with
//     "[rank N] " when there is more than one).
package debuglauncher

import (
	"context"

	"github.com/goaccel/goaccel/launcher"
)

// DefaultNumProcesses is debug_launcher's default.
const DefaultNumProcesses = 2

// DebugLauncher runs fn(args...) in numProcesses CPU worker processes (0
// means DefaultNumProcesses) and returns each rank's return values:
// results[r] holds rank r's values. It uses the running cell's context
// (launcher.SetCell), so interrupting the cell stops the workers.
func DebugLauncher(fn any, args []any, numProcesses int) ([][]any, error) {
	return DebugLauncherContext(launcher.CellContext(), fn, args, numProcesses)
}

// DebugLauncherContext is DebugLauncher with an explicit context.
func DebugLauncherContext(ctx context.Context, fn any, args []any, numProcesses int) ([][]any, error) {
	if numProcesses == 0 {
		numProcesses = DefaultNumProcesses
	}
	return launcher.LaunchWorkers(ctx, fn, args, launcher.Options{
		NumProcesses:   numProcesses,
		MixedPrecision: "no",
		MasterAddr:     "127.0.0.1",
		UsePort:        "0",
		UseCPU:         true,
	})
}
