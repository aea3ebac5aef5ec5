package accelerate

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/goaccel/goaccel/accelerate/fsdp"
	"github.com/goaccel/goaccel/accelerate/kwargs"
)

// Mixed-precision modes, in Accelerate's PrecisionType order.
var precisionTypes = []string{"no", "fp8", "fp16", "bf16"}

// config collects NewAccelerator's options over the environment's values.
type config struct {
	mixedPrecision string // "" = from the environment
	cpu            *bool  // nil = from the environment
	timeout        time.Duration
	ctx            context.Context
	out            io.Writer
	logger         logrus.FieldLogger
	lookupEnv      func(string) (string, bool)
	// gpus counts the GPUs a process sees when CUDA_VISIBLE_DEVICES is
	// unset (NVML, package gpu; tests replace it).
	gpus func() int

	// Per-Accelerator settings (see trackers.go, handlers.go).
	logWith    []any
	projectDir string
	loggingDir string
	liveChart  *bool // nil = on unless GOACCEL_LIVECHART is false
	handlers   []any
	handlerSet *kwargs.Set // validated by newState (before joining), else by NewAccelerator
	fsdp       *fsdp.Plugin

	// Training loop (see training.go, savestate.go).
	gradAccSteps   int
	autoCheckpoint bool
	totalLimit     int
	iteration      int
}

// Option configures NewAccelerator.
type Option func(*config) error

// WithMixedPrecision selects "no", "fp16", "bf16" or "fp8" (any case),
// overriding ACCELERATE_MIXED_PRECISION.
func WithMixedPrecision(mode string) Option {
	return func(c *config) error {
		m, err := parsePrecision(mode)
		if err != nil {
			return err
		}
		c.mixedPrecision = m
		return nil
	}
}

// WithCPU forces (true) or forbids (false) CPU execution, overriding
// ACCELERATE_USE_CPU.
func WithCPU(cpu bool) Option {
	return func(c *config) error {
		c.cpu = &cpu
		return nil
	}
}

// WithTimeout bounds joining the process group and every collective
// (default: 1800 s on CPU, 600 s on GPU, as Accelerate's
// InitProcessGroupKwargs for gloo and nccl). It is a shorthand for
// kwargs.InitProcessGroupKwargs{Timeout: d}; when both are given, the
// handler's timeout wins.
func WithTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("accelerate: WithTimeout(%v): the timeout must be positive", d)
		}
		c.timeout = d
		return nil
	}
}

// WithContext sets the context that bounds joining and every collective of
// the Accelerator (the worker runtime cancels it on interrupt).
func WithContext(ctx context.Context) Option {
	return func(c *config) error {
		if ctx == nil {
			return fmt.Errorf("accelerate: WithContext(nil)")
		}
		c.ctx = ctx
		return nil
	}
}

// WithOutput sets where Print writes (default os.Stdout).
func WithOutput(w io.Writer) Option {
	return func(c *config) error {
		c.out = w
		return nil
	}
}

// WithLogger sets where the process group logs diagnostics.
func WithLogger(l logrus.FieldLogger) Option {
	return func(c *config) error {
		c.logger = l
		return nil
	}
}

// WithGradientAccumulationSteps sets Accelerate's
// gradient_accumulation_steps (default 1): Accumulate all-reduces the
// gradients on every n-th call only.
func WithGradientAccumulationSteps(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("accelerate: WithGradientAccumulationSteps(%d): the number of steps must be at least 1", n)
		}
		c.gradAccSteps = n
		return nil
	}
}

// WithFSDPPlugin turns on sharded data parallelism with plugin
// (Accelerate's fsdp_plugin=): its unset fields come from the FSDP_*
// environment variables. Without it, ACCELERATE_USE_FSDP=true turns FSDP on
// with a plugin read from the environment alone.
func WithFSDPPlugin(plugin fsdp.Plugin) Option {
	return func(c *config) error {
		c.fsdp = &plugin
		return nil
	}
}

// withGPUs replaces NVML's count of the machine's GPUs (tests).
func withGPUs(n int) Option {
	return func(c *config) error {
		c.gpus = func() int { return n }
		return nil
	}
}

// withEnv replaces os.LookupEnv (tests).
func withEnv(lookup func(string) (string, bool)) Option {
	return func(c *config) error {
		c.lookupEnv = lookup
		return nil
	}
}

// parsePrecision validates a mixed-precision mode. The error is the one
// Accelerate means to raise (its notebook_launcher crashes with an
// AttributeError instead).
func parsePrecision(mode string) (string, error) {
	m := strings.ToLower(strings.TrimSpace(mode))
	for _, p := range precisionTypes {
		if m == p {
			return m, nil
		}
	}
	return "", fmt.Errorf("Unknown mixed_precision mode: %s. Choose between ['%s']", mode, strings.Join(precisionTypes, "', '"))
}
