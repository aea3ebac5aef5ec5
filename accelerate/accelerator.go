package accelerate

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/goaccel/goaccel/accelerate/amp"
	"github.com/goaccel/goaccel/accelerate/fsdp"
	"github.com/goaccel/goaccel/accelerate/kwargs"
	"github.com/goaccel/goaccel/accelerate/pg"
	"github.com/goaccel/goaccel/gpu"
	"github.com/goaccel/goaccel/tracking"
)

// Accelerator is a handle on the process-wide state: where this process
// sits in the group, its device and precision, and the collectives. All
// Accelerators of a process share one state (see StateInitialized).
type Accelerator struct {
	st     *processState
	logger logrus.FieldLogger

	// Per-Accelerator configuration, as Accelerate keeps it on the
	// Accelerator rather than in the shared state.
	handlers     kwargs.Set
	scaler       *amp.GradScaler
	trackerSpecs []tracking.Spec
	projectDir   string
	loggingDir   string
	liveChart    bool
	fsdp         *fsdp.Plugin // nil: DDP

	trkMu        sync.Mutex
	trackers     []tracking.GeneralTracker
	multi        *tracking.Multi // every tracker
	userMulti    *tracking.Multi // the selected ones (not the automatic live chart)
	trackersInit bool
	trackersDone bool

	train trainState // Accumulate, checkpoints, GatherForMetrics (training.go)
}

// NewAccelerator reads the launch environment (see env.go), applies opts,
// and returns an Accelerator. In a single process (WORLD_SIZE unset or 1) it
// needs nothing else; with WORLD_SIZE > 1 it joins the process group and
// returns once every rank has joined, or an error naming the ranks that did
// not within the timeout. A malformed environment is an error, never a panic.
//
// The first call in a process creates the process-wide state; later calls
// share it, and fail if they ask for a different precision or device kind.
func NewAccelerator(opts ...Option) (*Accelerator, error) {
	c := &config{ctx: context.Background(), out: os.Stdout, lookupEnv: os.LookupEnv, gpus: machineGPUs}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(c); err != nil {
			return nil, err
		}
	}
	// The tracker selection is checked before the process state exists, so
	// that a bad log_with leaves nothing behind.
	specs, loggingDir, live, err := trackerConfig(c)
	if err != nil {
		return nil, err
	}
	// So is the FSDP plugin (a bad strategy must not join the group).
	plugin, err := fsdpPlugin(c)
	if err != nil {
		return nil, err
	}
	if env, err := readEnv(c.lookupEnv); err == nil && plugin != nil {
		if err := plugin.Check(env.worldSize, env.numNodes()); err != nil {
			return nil, fmt.Errorf("accelerate: %w", err)
		}
	}
	st, err := acquireState(c)
	if err != nil {
		return nil, err
	}
	if plugin != nil { // again: an InitProcessGroupKwargs init_method may complete the environment
		if err := plugin.Check(st.env.worldSize, st.env.numNodes()); err != nil {
			return nil, fmt.Errorf("accelerate: %w", err)
		}
	}
	a := &Accelerator{st: st, logger: c.logger, trackerSpecs: specs, projectDir: c.projectDir, loggingDir: loggingDir, liveChart: live}
	if a.logger == nil {
		a.logger = logrus.StandardLogger()
	}
	a.train = newTrainState(c)
	if err := a.applyHandlers(c); err != nil {
		return nil, err
	}
	a.fsdp = plugin
	return a, nil
}

// fsdpPlugin resolves the FSDP plugin of WithFSDPPlugin, or the
// environment's when ACCELERATE_USE_FSDP is true (nil when FSDP is off).
func fsdpPlugin(c *config) (*fsdp.Plugin, error) {
	p := c.fsdp
	if p == nil {
		on, err := fsdp.Enabled(c.lookupEnv)
		if err != nil {
			return nil, fmt.Errorf("accelerate: %w", err)
		}
		if !on {
			return nil, nil
		}
		p = &fsdp.Plugin{}
	}
	r, err := p.Resolve(c.lookupEnv)
	if err != nil {
		return nil, fmt.Errorf("accelerate: %w", err)
	}
	return &r, nil
}

// FSDPPlugin is the resolved FullyShardedDataParallelPlugin, or nil when
// FSDP is off (the processes replicate the model: DDP).
func (a *Accelerator) FSDPPlugin() *fsdp.Plugin {
	if a.fsdp == nil {
		return nil
	}
	p := *a.fsdp
	return &p
}

// ProcessIndex is the global rank of this process.
func (a *Accelerator) ProcessIndex() int { return a.st.env.rank }

// LocalProcessIndex is the rank of this process on its node.
func (a *Accelerator) LocalProcessIndex() int { return a.st.env.localRank }

// NumProcesses is the number of processes in the group.
func (a *Accelerator) NumProcesses() int { return a.st.env.worldSize }

// LocalNumProcesses is the number of processes on each node
// (LOCAL_WORLD_SIZE).
func (a *Accelerator) LocalNumProcesses() int { return a.st.env.localWorldSize }

// NodeRank is the index of this process's node (NODE_RANK).
func (a *Accelerator) NodeRank() int { return a.st.env.nodeRank }

// RestartCount is how many times the launcher restarted the group
// (TORCHELASTIC_RESTART_COUNT).
func (a *Accelerator) RestartCount() int { return a.st.env.restartCount }

// IsMainProcess reports whether this is global rank 0.
func (a *Accelerator) IsMainProcess() bool { return a.st.env.rank == 0 }

// IsLocalMainProcess reports whether this is the first process of its node.
func (a *Accelerator) IsLocalMainProcess() bool { return a.st.env.localRank == 0 }

// IsLastProcess reports whether this is the last global rank.
func (a *Accelerator) IsLastProcess() bool { return a.st.env.rank == a.st.env.worldSize-1 }

// Device is "cuda:N" in GPU mode (CUDA_VISIBLE_DEVICES lists devices and
// ACCELERATE_USE_CPU is off; N = local rank modulo the visible count, as
// Accelerate's set_device) and "cpu" otherwise. N indexes the visible
// devices, as in CUDA.
func (a *Accelerator) Device() string { return a.st.device }

// VisibleDevice is the CUDA_VISIBLE_DEVICES entry (index or UUID) of this
// process's GPU; "" on CPU.
func (a *Accelerator) VisibleDevice() string { return a.st.visibleDevice }

// UseCPU reports whether the process runs on the CPU.
func (a *Accelerator) UseCPU() bool { return a.st.cpu }

// MixedPrecision is "no", "fp16", "bf16" or "fp8".
func (a *Accelerator) MixedPrecision() string { return a.st.mixedPrecision }

// DistributedType is Accelerate's name for the setup: "NO", "MULTI_CPU",
// "MULTI_GPU", or "FSDP" with an FSDP plugin (on CPU processes too, where
// Accelerate has no FSDP).
func (a *Accelerator) DistributedType() string {
	switch {
	case a.fsdp != nil:
		return "FSDP"
	case a.st.env.worldSize == 1:
		return "NO"
	case a.st.cpu:
		return "MULTI_CPU"
	}
	return "MULTI_GPU"
}

// Timeout is the bound on joining the group and on every collective
// (InitProcessGroupKwargs.Timeout, WithTimeout, or the backend's default).
func (a *Accelerator) Timeout() time.Duration { return a.st.timeout }

// Backend is the process-group backend: "gloo" on CPU, "nccl" on the GPU
// path, unless InitProcessGroupKwargs.Backend chose one. goaccel's group
// is TCP either way; the name selects the defaults (timeout) and checks.
func (a *Accelerator) Backend() string { return a.st.backend }

// Context is the context that bounds the Accelerator's collectives
// (WithContext; cancelled on interrupt in launched workers), for
// collectives run on Group directly.
func (a *Accelerator) Context() context.Context { return a.st.ctx }

// Group returns the process group (nil in a single process or after
// EndTraining), for collectives this package does not wrap.
func (a *Accelerator) Group() *pg.Group {
	g, _ := a.st.groupFor("Group")
	return g
}

func (a *Accelerator) String() string {
	return fmt.Sprintf("Accelerator(distributed_type=%s, num_processes=%d, process_index=%d, local_process_index=%d, device=%s, mixed_precision=%s)",
		a.DistributedType(), a.NumProcesses(), a.ProcessIndex(), a.LocalProcessIndex(), a.Device(), a.MixedPrecision())
}

// Print prints its arguments, like fmt.Println, once per node: on the local
// main process only, as Accelerate's Accelerator.print.
func (a *Accelerator) Print(args ...any) {
	if a.IsLocalMainProcess() {
		fmt.Fprintln(a.st.out, args...)
	}
}

// OnMainProcess runs f on the main process only.
func (a *Accelerator) OnMainProcess(f func()) {
	if a.IsMainProcess() {
		f()
	}
}

// OnLocalMainProcess runs f on the first process of each node only.
func (a *Accelerator) OnLocalMainProcess(f func()) {
	if a.IsLocalMainProcess() {
		f()
	}
}

// OnLastProcess runs f on the last process only.
func (a *Accelerator) OnLastProcess(f func()) {
	if a.IsLastProcess() {
		f()
	}
}

// OnProcess runs f on the process with global rank index only.
func (a *Accelerator) OnProcess(index int, f func()) {
	if a.ProcessIndex() == index {
		f()
	}
}

// MainProcessFirst runs f on the main process, then (after a barrier) on
// the others: for work such as downloading or preprocessing that the other
// processes should reuse. Every process must call it.
func (a *Accelerator) MainProcessFirst(f func()) error {
	return a.firstThenOthers(a.IsMainProcess(), f)
}

// LocalMainProcessFirst is MainProcessFirst per node: the local main process
// of each node runs f before the other processes.
func (a *Accelerator) LocalMainProcessFirst(f func()) error {
	return a.firstThenOthers(a.IsLocalMainProcess(), f)
}

func (a *Accelerator) firstThenOthers(first bool, f func()) error {
	if !first {
		if err := a.WaitForEveryone(); err != nil {
			return err
		}
	}
	f()
	if first {
		return a.WaitForEveryone()
	}
	return nil
}

// EndTraining ends the run on this process (Accelerate's end_training): it
// finishes every tracker (which flushes what they buffered; the live chart
// draws its final state), then tears down the process group
// (destroy_process_group). Collectives fail afterwards; the process state
// stays initialized (StateInitialized) until ResetState. The group is torn
// down even when a tracker fails; the trackers' errors are returned. Safe to
// call more than once (trackers are finished once).
func (a *Accelerator) EndTraining() error {
	err := a.finishTrackers()
	a.st.shutdown()
	return err
}

// Close is EndTraining.
func (a *Accelerator) Close() error {
	return a.EndTraining()
}

// machineGPUs counts the machine's NVIDIA GPUs through NVML (none without
// a driver, or in a binary built without cgo).
func machineGPUs() int {
	devs, err := gpu.Discover()
	if err != nil {
		return 0
	}
	return len(devs)
}
