package launcher

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/internal/launchenv"
)

// NotebookLauncher runs fn(args...) as notebook_launcher does and returns
// each process's return values: results[i] holds the values returned by
// local rank i (global rank NodeRank*NumProcesses+i), in order; for a
// function returning one value, results[r][0] is rank r's value; across
// nodes with node agents, node 0 gets every global rank's, in rank order
// (see the package documentation). Accelerate discards them. A function whose last result is an error
// fails its rank when that error is non-nil (in process, NotebookLauncher
// returns the results together with the error).
//
// It uses the running cell's context (SetCell): interrupting the cell stops
// every worker. NotebookLauncherContext takes the context explicitly.
func NotebookLauncher(fn any, args []any, opts Options) ([][]any, error) {
	return NotebookLauncherContext(CellContext(), fn, args, opts)
}

// NotebookLauncherContext is NotebookLauncher with an explicit context;
// cancelling ctx stops every worker (SIGINT, then SIGTERM, then SIGKILL,
// within 5 s) and returns an error wrapping ctx.Err().
//
// The decision tree, in order: check MixedPrecision; resolve NumProcesses 0
// to the GPU count; check NodeRank < NumNodes; with one process on one node
// call fn in this process ("Launching training on one GPU." / "Launching
// training on CPU."); otherwise (more processes, or more nodes: Accelerate
// would run a one-process node in place, alone), refuse if an Accelerator or a GPU is already in use in
// this process, refuse more processes than GPUs, run the debug pre-flight
// when ACCELERATE_DEBUG_MODE is 1, true or yes, print "Launching training
// on N GPUs." (or CPUs) and start one worker process per rank.
//
// In a Slurm allocation of several nodes, NumNodes left 0 launches on all
// of them, the agents of the other nodes started with srun (see
// slurmagents.go).
func NotebookLauncherContext(ctx context.Context, fn any, args []any, opts Options) ([][]any, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	opts, agents, err := fromSlurmAllocation(ctx, opts, os.Getenv, cellPublisher())
	if err != nil {
		return nil, err
	}
	if agents == nil {
		return notebookLaunch(ctx, fn, args, opts)
	}
	defer agents.stop()
	ctx, done := agents.watch(ctx)
	defer done()
	res, err := notebookLaunch(ctx, fn, args, opts)
	return res, agentsError(ctx, err)
}

func notebookLaunch(ctx context.Context, fn any, args []any, opts Options) ([][]any, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if o.NumProcesses < 0 {
		return nil, fmt.Errorf("launcher: NumProcesses must not be negative, got %d", o.NumProcesses)
	}
	probes := currentProbes()
	var devs []GPU
	if !o.UseCPU {
		if devs, err = probes.GPUs(); err != nil {
			return nil, fmt.Errorf("launcher: listing the GPUs: %w", err)
		}
	}
	if o.NumProcesses == 0 {
		if len(devs) == 0 {
			return nil, ErrNoNumProcesses
		}
		o.NumProcesses = len(devs)
	}
	pub := cellPublisher()
	if o.NumProcesses == 1 && o.NumNodes == 1 {
		if len(devs) > 0 {
			pub.Stream("stdout", "Launching training on one GPU.\n")
		} else {
			pub.Stream("stdout", "Launching training on CPU.\n")
		}
		return runInProcess(fn, args, o.MixedPrecision)
	}
	if probes.AcceleratorInitialized() || probes.DeviceBound() {
		return nil, ErrAcceleratorInitialized
	}
	if len(devs) > 0 && o.NumProcesses > len(devs) {
		return nil, fmt.Errorf("launcher: NumProcesses is %d but only %d GPU(s) are visible; use NumProcesses <= %d (or 0 for one process per GPU), or UseCPU for CPU workers", o.NumProcesses, len(devs), len(devs))
	}
	s, payload, err := prepare(fn, args)
	if err != nil {
		return nil, err
	}
	l, err := newLaunch(o, devs, pub)
	if err != nil {
		return nil, err
	}
	defer l.close()
	if debugModeEnabled() {
		if _, err := l.run(ctx, modePreflight, nil, nil); err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			return nil, &PreflightError{Err: err}
		}
	}
	kind := "CPU"
	if len(l.devices) > 0 {
		kind = "GPU"
	}
	if o.NumNodes > 1 {
		pub.Stream("stdout", fmt.Sprintf("Launching training on %d %ss on node %d of %d.\n", o.NumProcesses, kind, o.NodeRank, o.NumNodes))
	} else {
		pub.Stream("stdout", fmt.Sprintf("Launching training on %d %ss.\n", o.NumProcesses, kind))
	}
	return l.run(ctx, modeRun, s, payload)
}

// LaunchWorkers runs fn(args...) in opts.NumProcesses (at least 1) worker
// processes without NotebookLauncher's decision tree, guards, pre-flight or
// messages. It is the engine of debuglauncher.DebugLauncher. Results are as
// for NotebookLauncher.
func LaunchWorkers(ctx context.Context, fn any, args []any, opts Options) ([][]any, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if o.NumProcesses < 1 {
		return nil, fmt.Errorf("launcher: NumProcesses must be at least 1, got %d", o.NumProcesses)
	}
	var devs []GPU
	if !o.UseCPU {
		if devs, err = currentProbes().GPUs(); err != nil {
			return nil, fmt.Errorf("launcher: listing the GPUs: %w", err)
		}
		if len(devs) > 0 && o.NumProcesses > len(devs) {
			return nil, fmt.Errorf("launcher: NumProcesses is %d but only %d GPU(s) are visible", o.NumProcesses, len(devs))
		}
	}
	s, payload, err := prepare(fn, args)
	if err != nil {
		return nil, err
	}
	l, err := newLaunch(o, devs, cellPublisher())
	if err != nil {
		return nil, err
	}
	defer l.close()
	return l.run(ctx, modeRun, s, payload)
}

// runInProcess calls fn with ACCELERATE_MIXED_PRECISION set for the call, so
// an Accelerator created inside fn sees the requested precision.
func runInProcess(fn any, args []any, mixedPrecision string) ([][]any, error) {
	const key = launchenv.MixedPrecision
	prev, had := os.LookupEnv(key)
	if err := os.Setenv(key, mixedPrecision); err != nil {
		return nil, fmt.Errorf("launcher: setting %s: %w", key, err)
	}
	defer func() {
		if had {
			_ = os.Setenv(key, prev)
		} else {
			_ = os.Unsetenv(key)
		}
	}()
	res, err := callFunc(fn, args)
	if err != nil {
		var pe *PanicError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("launcher: the training function panicked: %w\n%s", err, pe.Stack)
		}
		if res == nil {
			return nil, err
		}
		return [][]any{res}, fmt.Errorf("launcher: the training function failed: %w", err)
	}
	return [][]any{res}, nil
}

// launch is one call of the launcher on this node: the resolved options,
// the place of this node's workers in the group, the hosted store and
// where output goes. Across nodes, cluster holds the rendezvous and the
// topology fields are set by each attempt's round.
type launch struct {
	opts     Options
	devices  []GPU // the GPU of each local rank; nil for CPU workers
	pub      frontend.Publisher
	cmd      WorkerCommand
	secret   string
	store    rendezvousStore // nil when another node or a worker hosts it
	endpoint string          // host:port the workers reach the store at

	rankBase int    // global rank of local rank 0
	world    int    // world size
	nodeRank int    // this node's rank
	numNodes int    // nodes in the launch
	launchID string // the launch's id across nodes ("" on one node)

	cluster *cluster // nil on one node
}

func newLaunch(o Options, devs []GPU, pub frontend.Publisher) (*launch, error) {
	cmd, err := currentWorkerCommand()
	if err != nil {
		return nil, err
	}
	l := &launch{opts: o, pub: pub, cmd: cmd, endpoint: o.RdzvEndpoint,
		rankBase: o.NumProcesses * o.NodeRank, world: o.NumProcesses * o.NumNodes,
		nodeRank: o.NodeRank, numNodes: o.NumNodes}
	if len(devs) > 0 {
		l.devices = devs[:o.NumProcesses]
	}
	if o.NumNodes > 1 {
		c, err := newCluster(l)
		if err != nil {
			l.close() // the store the leader may have started
			return nil, err
		}
		l.cluster = c
		return l, nil
	}
	if l.secret, err = newSecret(); err != nil {
		return nil, err
	}
	if o.RdzvBackend == "static" && o.NodeRank == 0 {
		st, err := hostStore(o.RdzvEndpoint, l.secret)
		if err != nil {
			return nil, fmt.Errorf("launcher: hosting the rendezvous store at %s: %w", o.RdzvEndpoint, err)
		}
		l.store = st
		host, _, _ := net.SplitHostPort(o.RdzvEndpoint)
		_, port, _ := net.SplitHostPort(st.Addr())
		l.endpoint = net.JoinHostPort(host, port)
	}
	return l, nil
}

func (l *launch) close() {
	if l.cluster != nil {
		l.cluster.close()
	}
	if l.store != nil {
		if err := l.store.Close(); err != nil {
			log.WithError(err).Debug("launcher: closing the rendezvous store")
		}
	}
}

// prepare captures fn and args with the installed session.
func prepare(fn any, args []any) (Session, []byte, error) {
	s := currentSession()
	if s == nil {
		return nil, nil, errors.New("launcher: no notebook session is installed (launcher.SetSession); it is needed to carry the function to the worker processes: NotebookLauncher runs a notebook's function, and a program (one goaccel export wrote, say) runs on worker processes under `goaccel launch` instead")
	}
	payload, err := s.Prepare(fn, args)
	if err != nil {
		return nil, nil, fmt.Errorf("launcher: preparing the function for the workers: %w", err)
	}
	return s, payload, nil
}

func newSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("launcher: generating the launch secret: %w", err)
	}
	return hex.EncodeToString(b), nil
}
