package launcher

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// log is the launcher's internal logger: diagnostics for the kernel's log,
// never for the cell.
var log = logrus.WithField("pkg", "launcher")

// GPU is one GPU a worker can own.
type GPU struct {
	Index int    // NVML index
	UUID  string // "GPU-…", preferred for CUDA_VISIBLE_DEVICES (immune to renumbering)
	Name  string
}

// visibleID is the value of CUDA_VISIBLE_DEVICES that selects g.
func (g GPU) visibleID() string {
	if g.UUID != "" {
		return g.UUID
	}
	return strconv.Itoa(g.Index)
}

// Probes tell the launcher about the machine and the kernel process. The
// program wires them once, at start-up, to packages gpu and accelerate:
//
//	launcher.SetProbes(launcher.Probes{
//		GPUs:                   func() ([]launcher.GPU, error) { /* gpu.Discover() */ },
//		AcceleratorInitialized: accelerate.StateInitialized,
//		DeviceBound:            gpu.BoundInKernel,
//	})
//
// A nil field keeps its default.
type Probes struct {
	// GPUs lists the visible GPUs without initializing any (NVML, not
	// CUDA); an empty list means none. Default: nvidia-smi's list (none when
	// nvidia-smi is not installed), as Accelerate does.
	GPUs func() ([]GPU, error)
	// AcceleratorInitialized reports an Accelerator already created in
	// this process. Default: false.
	AcceleratorInitialized func() bool
	// DeviceBound reports a GPU already bound in this process. Default:
	// false.
	DeviceBound func() bool
	// BindDevice runs in a debug pre-flight worker: it checks that the GPU
	// selected by CUDA_VISIBLE_DEVICES (empty for CPU workers) can be used.
	// Default: nvidia-smi must know that GPU.
	BindDevice func(visible string) error
}

var (
	probesMu sync.RWMutex
	hooks    = defaultProbes()
)

func defaultProbes() Probes {
	return Probes{
		GPUs:                   nvidiaSMIGPUs,
		AcceleratorInitialized: func() bool { return false },
		DeviceBound:            func() bool { return false },
		BindDevice:             nvidiaSMICheck,
	}
}

// SetProbes installs p's non-nil fields and returns a function that
// restores the previous probes.
func SetProbes(p Probes) (restore func()) {
	probesMu.Lock()
	prev := hooks
	if p.GPUs != nil {
		hooks.GPUs = p.GPUs
	}
	if p.AcceleratorInitialized != nil {
		hooks.AcceleratorInitialized = p.AcceleratorInitialized
	}
	if p.DeviceBound != nil {
		hooks.DeviceBound = p.DeviceBound
	}
	if p.BindDevice != nil {
		hooks.BindDevice = p.BindDevice
	}
	probesMu.Unlock()
	return func() {
		probesMu.Lock()
		hooks = prev
		probesMu.Unlock()
	}
}

func currentProbes() Probes {
	probesMu.RLock()
	defer probesMu.RUnlock()
	return hooks
}

const smiTimeout = 10 * time.Second

// nvidiaSMIGPUs lists the GPUs with nvidia-smi (which uses NVML and does not
// initialize CUDA in this process). No nvidia-smi means no GPU.
func nvidiaSMIGPUs() ([]GPU, error) {
	path, err := exec.LookPath("nvidia-smi")
	if err != nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), smiTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--query-gpu=index,uuid,name", "--format=csv,noheader").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			// nvidia-smi without a working driver: no usable GPU.
			log.WithError(err).WithField("stderr", string(ee.Stderr)).Debug("launcher: nvidia-smi failed; assuming no GPU")
			return nil, nil
		}
		return nil, fmt.Errorf("running nvidia-smi: %w", err)
	}
	return parseSMI(string(out))
}

func parseSMI(out string) ([]GPU, error) {
	var gpus []GPU
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.SplitN(line, ",", 3)
		if len(f) != 3 {
			return nil, fmt.Errorf("unexpected nvidia-smi line %q", line)
		}
		idx, err := strconv.Atoi(strings.TrimSpace(f[0]))
		if err != nil {
			return nil, fmt.Errorf("unexpected nvidia-smi line %q: %w", line, err)
		}
		gpus = append(gpus, GPU{Index: idx, UUID: strings.TrimSpace(f[1]), Name: strings.TrimSpace(f[2])})
	}
	return gpus, nil
}

// nvidiaSMICheck checks that nvidia-smi knows the GPU visible names.
func nvidiaSMICheck(visible string) error {
	if visible == "" {
		return nil
	}
	path, err := exec.LookPath("nvidia-smi")
	if err != nil {
		return nil // GPUs were found some other way; nothing to check with
	}
	ctx, cancel := context.WithTimeout(context.Background(), smiTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "-i", visible, "--query-gpu=uuid", "--format=csv,noheader").CombinedOutput()
	if err != nil {
		return fmt.Errorf("nvidia-smi cannot query GPU %s: %w: %s", visible, err, strings.TrimSpace(string(out)))
	}
	return nil
}
