package accelerate

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/goaccel/goaccel/accelerate/pg"
	"github.com/sirupsen/logrus"
)

// Default process-group timeouts, as Accelerate's InitProcessGroupKwargs:
// 1800 s for gloo (CPU) and 600 s for nccl (GPU).
const (
	DefaultCPUTimeout = 1800 * time.Second
	DefaultGPUTimeout = 600 * time.Second
)

// processState is the process-wide state every Accelerator of the process
// shares (Accelerate's AcceleratorState._shared_state).
type processState struct {
	env            launchEnv
	mixedPrecision string
	cpu            bool
	device         string
	visibleDevice  string // CUDA_VISIBLE_DEVICES entry of this process's GPU
	timeout        time.Duration
	ctx            context.Context
	out            io.Writer

	mu     sync.Mutex
	group  *pg.Group // nil when single-process or after EndTraining
	closed bool      // EndTraining/Close/ResetState was called
}

// registry is the deliberate process-wide state: one processState per
// process, created by the first NewAccelerator.
var registry struct {
	mu    sync.Mutex
	state *processState
}

// StateInitialized reports whether an Accelerator has been created in this
// process since start or the last ResetState: the kernel's guard against
// launching workers after a cell initialized Accelerate state (Accelerate's
// "the `Accelerator` should only be initialized inside your training
// function").
func StateInitialized() bool {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	return registry.state != nil
}

// ResetState forgets the process-wide state (the kernel's %reset): the
// process group, if any, is closed, and the next NewAccelerator starts from
// the environment again. Accelerators created before keep their view but
// their collectives fail.
func ResetState() {
	registry.mu.Lock()
	st := registry.state
	registry.state = nil
	registry.mu.Unlock()
	if st != nil {
		st.shutdown()
	}
}

// acquireState returns the process state, creating it (and joining the
// process group) on first use.
func acquireState(c *config) (*processState, error) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if st := registry.state; st != nil {
		if c.mixedPrecision != "" && c.mixedPrecision != st.mixedPrecision {
			return nil, fmt.Errorf("accelerate: the process state has already been initialized with mixed_precision=%q and cannot be changed; create the Accelerator with mixed_precision=%q only once per process, or call ResetState first", st.mixedPrecision, c.mixedPrecision)
		}
		if c.cpu != nil && *c.cpu != st.cpu {
			return nil, fmt.Errorf("accelerate: the process state has already been initialized with cpu=%v and cannot be changed; call ResetState first", st.cpu)
		}
		return st, nil
	}
	st, err := newState(c)
	if err != nil {
		return nil, err
	}
	registry.state = st
	return st, nil
}

func newState(c *config) (*processState, error) {
	env, err := readEnv(c.lookupEnv)
	if err != nil {
		return nil, err
	}
	st := &processState{env: env, ctx: c.ctx, out: c.out}
	st.mixedPrecision = c.mixedPrecision
	if st.mixedPrecision == "" {
		st.mixedPrecision = "no"
		if env.mixedPrecision != "" {
			if st.mixedPrecision, err = parsePrecision(env.mixedPrecision); err != nil {
				return nil, fmt.Errorf("accelerate: %s: %w", EnvMixedPrecision, err)
			}
		}
	}
	st.cpu = env.useCPU
	if c.cpu != nil {
		st.cpu = *c.cpu
	}
	switch {
	case st.cpu || len(env.cudaVisible) == 0:
		if !st.cpu && c.cpu != nil {
			return nil, fmt.Errorf("accelerate: WithCPU(false) but no GPU is visible (%s is unset or empty)", EnvCUDAVisible)
		}
		st.cpu = true
		st.device = "cpu"
	default:
		st.device, st.visibleDevice = gpuDevice(env.localRank, env.cudaVisible)
	}
	if st.mixedPrecision == "fp16" && st.cpu {
		return nil, fmt.Errorf("fp16 mixed precision requires a GPU (not 'cpu')")
	}
	st.timeout = c.timeout
	if st.timeout == 0 {
		st.timeout = DefaultCPUTimeout
		if !st.cpu {
			st.timeout = DefaultGPUTimeout
		}
	}
	if env.worldSize > 1 {
		logger := c.logger
		if logger == nil {
			logger = logrus.StandardLogger()
		}
		g, err := pg.Join(c.ctx, pg.Config{
			Rank:      env.rank,
			WorldSize: env.worldSize,
			StoreAddr: env.storeAddr,
			Secret:    env.secret,
			Timeout:   st.timeout,
			HostStore: env.rdzvBackend == "c10d",
			Namespace: fmt.Sprintf("%s/restart%d", env.runID, env.restartCount),
			Logger:    logger,
		})
		if err != nil {
			return nil, fmt.Errorf("accelerate: rank %d of %d could not join the process group at %s: %w", env.rank, env.worldSize, env.storeAddr, err)
		}
		st.group = g
	}
	return st, nil
}

// groupFor returns the live process group; nil with a nil error in a
// single process.
func (st *processState) groupFor(op string) (*pg.Group, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed && st.env.worldSize > 1 {
		return nil, fmt.Errorf("accelerate: %s: the process group was destroyed (EndTraining, Close or ResetState)", op)
	}
	return st.group, nil
}

func (st *processState) shutdown() {
	st.mu.Lock()
	g := st.group
	st.group = nil
	st.closed = true
	st.mu.Unlock()
	if g != nil {
		g.Close()
	}
}

// gpuDevice maps a local rank onto the visible GPUs as Accelerate's
// set_device does (local_process_index % device_count): the device name
// ("cuda:N", N indexing the visible devices) and the CUDA_VISIBLE_DEVICES
// entry it designates.
func gpuDevice(localRank int, visible []string) (string, string) {
	idx := localRank % len(visible)
	return "cuda:" + strconv.Itoa(idx), visible[idx]
}
