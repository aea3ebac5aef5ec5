package accelerate

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goaccel/goaccel/accelerate/kwargs"
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
	backend        string // "gloo" or "nccl" (InitProcessGroupKwargs)
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
	// The precision comes first: the kwargs handlers are checked against it,
	// and InitProcessGroupKwargs must be known before the group is joined.
	mp := c.mixedPrecision
	if mp == "" {
		mp = "no"
		if v, _ := c.lookupEnv(EnvMixedPrecision); strings.TrimSpace(v) != "" {
			var err error
			if mp, err = parsePrecision(strings.TrimSpace(v)); err != nil {
				return nil, fmt.Errorf("accelerate: %s: %w", EnvMixedPrecision, err)
			}
		}
	}
	set, err := kwargs.ValidateHandlers(c.handlers, mp)
	if err != nil {
		return nil, err
	}
	c.handlerSet = &set
	ipg := set.InitProcessGroup()
	lookup := c.lookupEnv
	if ep, ok := strings.CutPrefix(ipg.InitMethod, "tcp://"); ok {
		// init_method="tcp://host:port" names the rendezvous endpoint.
		lookup = func(k string) (string, bool) {
			if k == EnvRdzvEndpoint {
				return ep, true
			}
			return c.lookupEnv(k)
		}
	}
	env, err := readEnv(lookup)
	if err != nil {
		return nil, err
	}
	st := &processState{env: env, ctx: c.ctx, out: c.out, mixedPrecision: mp}
	st.cpu = env.useCPU
	if c.cpu != nil {
		st.cpu = *c.cpu
	}
	visible := env.cudaVisible
	if visible == nil && !st.cpu && c.gpus != nil {
		// CUDA_VISIBLE_DEVICES unset: every GPU of the machine is visible,
		// as CUDA (and so PyTorch and Accelerate) sees them.
		for i := range c.gpus() {
			visible = append(visible, strconv.Itoa(i))
		}
	}
	switch {
	case st.cpu || len(visible) == 0:
		if !st.cpu && c.cpu != nil {
			return nil, fmt.Errorf("accelerate: WithCPU(false) but no GPU is visible (%s is empty, or unset and NVML finds none)", EnvCUDAVisible)
		}
		st.cpu = true
		st.device = "cpu"
	default:
		st.device, st.visibleDevice = gpuDevice(env.localRank, visible)
	}
	if st.mixedPrecision == "fp16" && st.cpu {
		return nil, fmt.Errorf("fp16 mixed precision requires a GPU (not 'cpu')")
	}
	// InitProcessGroupKwargs: the backend ("gloo" on CPU, "nccl" names the
	// GPU path) and the timeout of the rendezvous and of every collective
	// (the handler's, else WithTimeout's, else the backend's default).
	st.backend = ipg.EffectiveBackend(!st.cpu)
	switch {
	case ipg.Timeout > 0:
		st.timeout = ipg.Timeout
	case c.timeout > 0:
		st.timeout = c.timeout
	default:
		st.timeout = ipg.EffectiveTimeout(st.backend)
	}
	if env.worldSize > 1 {
		if err := ipg.CheckBackend(!st.cpu); err != nil {
			return nil, err
		}
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
			Namespace: env.namespace,
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
