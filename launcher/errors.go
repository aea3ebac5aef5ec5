package launcher

import (
	"errors"
	"fmt"
	"strings"
)

// Accelerate's messages, word for word.
var (
	// ErrNoNumProcesses: NumProcesses is 0 and no GPU is visible.
	ErrNoNumProcesses = errors.New("You have to specify the number of devices you would like to use, add `num_processes=...` to your call.")
	// ErrNodeRank: NodeRank >= NumNodes.
	ErrNodeRank = errors.New("The node_rank must be less than the number of nodes.")
	// ErrAcceleratorInitialized: an Accelerator (or a bound GPU) already
	// exists in the kernel process, so workers would not be alone on it.
	ErrAcceleratorInitialized = errors.New("To launch a multi-device training from your notebook, the `Accelerator` should only be initialized inside your training function. Restart your notebook and make sure no cells initializes an `Accelerator`.")
)

// preflightPrefix starts the error of a failed debug pre-flight
// (ACCELERATE_DEBUG_MODE), as in Accelerate.
const preflightPrefix = "An issue was found when verifying a stable environment for the notebook launcher."

// PreflightError is returned when the debug pre-flight launch
// (ACCELERATE_DEBUG_MODE) failed; the training function did not run.
type PreflightError struct{ Err error }

func (e *PreflightError) Error() string {
	return preflightPrefix + " The following error was raised: " + e.Err.Error()
}

// Unwrap returns the failure of the pre-flight workers.
func (e *PreflightError) Unwrap() error { return e.Err }

// PanicError is how a WorkerRuntime reports that the user's function
// panicked: the panic value (as text) and the goroutine's stack. Runtimes
// should return it (possibly wrapped) from Run; the launcher then reports
// the panic, not a plain error.
type PanicError struct {
	Value string // fmt.Sprint of the value passed to panic
	Stack string // traceback, e.g. from runtime/debug.Stack
}

func (e *PanicError) Error() string { return "panic: " + e.Value }

// ChildFailedError is the failure of one worker: the first rank that failed
// in the last attempt (the root cause; the ranks stopped because of it are
// not failures). It plays the part of torchelastic's ChildFailedError.
type ChildFailedError struct {
	Rank      int // global rank
	LocalRank int // rank on this node
	// ExitCode is the worker's exit status, or -1 when a signal ended it.
	ExitCode int
	// Signal names the signal that ended the worker ("killed",
	// "segmentation fault"), empty otherwise.
	Signal string
	// Panic is the panic value when the function panicked.
	Panic string
	// Message is the error the function (or the worker) reported, when it
	// did not panic.
	Message string
	// Traceback is the panic's stack, as the worker runtime captured it.
	Traceback string
	// LastStderr holds the worker's last lines of standard error.
	LastStderr []string
	// Restarts is how many times the group had been restarted.
	Restarts int
}

// maxStderrInError bounds the stderr lines Error shows (LastStderr may hold
// more).
const maxStderrInError = 10

func (e *ChildFailedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "launcher: rank %d (local rank %d) failed", e.Rank, e.LocalRank)
	if e.Signal != "" {
		fmt.Fprintf(&b, " (%s)", e.Signal)
	} else {
		fmt.Fprintf(&b, " (exit status %d)", e.ExitCode)
	}
	if e.Restarts > 0 {
		fmt.Fprintf(&b, " after %d restart(s) of the group", e.Restarts)
	}
	switch {
	case e.Panic != "":
		fmt.Fprintf(&b, ": panic: %s", e.Panic)
	case e.Message != "":
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if e.Traceback != "" {
		b.WriteString("\n")
		b.WriteString(strings.TrimRight(e.Traceback, "\n"))
	}
	if len(e.LastStderr) > 0 {
		lines := e.LastStderr
		if len(lines) > maxStderrInError {
			lines = lines[len(lines)-maxStderrInError:]
		}
		fmt.Fprintf(&b, "\nlast lines of rank %d's stderr:", e.Rank)
		for _, l := range lines {
			b.WriteString("\n  ")
			b.WriteString(l)
		}
	}
	return b.String()
}
