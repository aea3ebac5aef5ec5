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
	LocalRank int // rank on its node
	// NodeRank and Host name the worker's node in a launch across nodes
	// (Host is empty on one node).
	NodeRank int
	Host     string
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
	if e.Host != "" {
		fmt.Fprintf(&b, "launcher: rank %d (local rank %d on node %d, %s) failed", e.Rank, e.LocalRank, e.NodeRank, e.Host)
	} else {
		fmt.Fprintf(&b, "launcher: rank %d (local rank %d) failed", e.Rank, e.LocalRank)
	}
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

// describe is the failure in a few words, for the restart notice.
func (e *ChildFailedError) describe() string {
	what := e.Signal
	if what == "" {
		what = fmt.Sprintf("exit status %d", e.ExitCode)
	}
	if e.Host != "" {
		return fmt.Sprintf("rank %d on node %d (%s) failed (%s)", e.Rank, e.NodeRank, e.Host, what)
	}
	return fmt.Sprintf("rank %d failed (%s)", e.Rank, what)
}

func (e *ChildFailedError) setRestarts(n int) { e.Restarts = n }

// collateral reports a failure that only echoes another rank's: the
// worker's error names a peer that closed or did not answer (a
// *pg.RankError's text), so the root cause is elsewhere.
func (e *ChildFailedError) collateral() bool {
	return strings.Contains(e.Message, "pg: rank ") || strings.Contains(e.Panic, "pg: rank ")
}

// NodeFailedError is the failure of a whole node of a launch across nodes:
// its agent died or was cut off (its connection to the launcher closed, or
// its rendezvous lease expired), or the node reported a failure of its own
// (a node that runs the notebook itself).
type NodeFailedError struct {
	NodeRank int
	Host     string // the address the node is reached at
	Ranks    []int  // the global ranks it ran
	// Lost is true when the node died or was cut off, false when it
	// reported a failure.
	Lost   bool
	Reason string
	// Restarts is how many times the group had been restarted.
	Restarts int
}

func (e *NodeFailedError) Error() string {
	var b strings.Builder
	b.WriteString("launcher: ")
	b.WriteString(e.describe())
	if e.Restarts > 0 {
		fmt.Fprintf(&b, " after %d restart(s) of the group", e.Restarts)
	}
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	return b.String()
}

func (e *NodeFailedError) describe() string {
	what := "failed"
	if e.Lost {
		what = "was lost"
	}
	return fmt.Sprintf("node %d (%s) %s", e.NodeRank, nodeWhere(e.Host, e.Ranks), what)
}

func (e *NodeFailedError) setRestarts(n int) { e.Restarts = n }

// nodeWhere is "10.0.0.2, ranks 2-3".
func nodeWhere(host string, ranks []int) string {
	var b strings.Builder
	if host != "" {
		b.WriteString(host)
		b.WriteString(", ")
	}
	switch {
	case len(ranks) == 0:
		b.WriteString("no ranks")
	case len(ranks) == 1:
		fmt.Fprintf(&b, "rank %d", ranks[0])
	default:
		fmt.Fprintf(&b, "ranks %d-%d", ranks[0], ranks[len(ranks)-1])
	}
	return b.String()
}

// groupFailure is what ends an attempt: a worker or a node that failed.
type groupFailure interface {
	error
	describe() string
	setRestarts(int)
}

// failurePriority ranks root causes: a lost node explains the failures of
// the ranks that talked to it, a rank's own failure explains its peers'.
// A node that reports a failure (through the rendezvous, as its launcher
// saw it) says at second hand what its agent's report of the failed rank
// says in full, and the two race: the rank's own report wins.
func failurePriority(f groupFailure) int {
	switch v := f.(type) {
	case *NodeFailedError:
		if v.Lost {
			return 4
		}
		return 2
	case *ChildFailedError:
		if v.collateral() {
			return 1
		}
		return 3
	}
	return 0
}
