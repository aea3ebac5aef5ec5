// Package gpu discovers NVIDIA GPUs through NVML (github.com/NVIDIA/go-nvml)
// and keeps the process-wide record of which GPU the kernel process has bound.
//
// Discovery never crashes the process: without a driver (or in a binary
// built with CGO_ENABLED=0, which cannot use NVML) [Discover] returns an
// error wrapping [ErrNoGPU] and an empty list. go-nvml kills the process if
// any NVML function, Shutdown included, is called after a failed Init, so
// after a failed Init nothing else is called. NVML sits behind the small
// nvmlLib interface (nvml_cgo.go), so tests drive discovery with go-nvml's
// mocks; a test against a real GPU is behind the build tag "nvml"
// (go test -tags nvml ./gpu).
package gpu

import (
	"errors"
	"fmt"
	"sync"
)

// ErrNoGPU is wrapped by Discover's error when no GPU can be used: no
// driver, NVML failing to initialize, a binary built without cgo, or zero
// devices. The error text says which.
var ErrNoGPU = errors.New("gpu: no GPU")

// MIGMode is a device's current Multi-Instance GPU mode.
type MIGMode string

// MIG modes.
const (
	MIGUnsupported MIGMode = "unsupported" // or unknown
	MIGDisabled    MIGMode = "disabled"
	MIGEnabled     MIGMode = "enabled"
)

// Device describes one GPU as NVML reports it.
type Device struct {
	Index int    // NVML index (not remapped by CUDA_VISIBLE_DEVICES)
	Name  string // e.g. "NVIDIA H100 80GB HBM3"
	UUID  string // "GPU-…"

	// Memory in bytes; MemoryKnown is false when NVML could not report it.
	MemoryTotal, MemoryUsed, MemoryFree uint64
	MemoryKnown                         bool

	// Utilization in percent over NVML's last sample period; -1 when the
	// device (or driver) does not report it.
	UtilizationGPU, UtilizationMemory int

	PCIBusID string  // "00000000:3B:00.0"; "" when unknown
	MIG      MIGMode // current MIG mode
}

func (d Device) String() string {
	return fmt.Sprintf("GPU %d: %s (%s), %d/%d MiB used, bus %s", d.Index, d.Name, d.UUID, d.MemoryUsed>>20, d.MemoryTotal>>20, d.PCIBusID)
}

// The kernel-process binding (deliberate process-wide state, like package
// accelerate's registry): code that starts using a GPU in the kernel process
// calls Bind, and the launcher refuses a multi-process launch while
// BoundInKernel reports true, because those devices may already be busy or
// initialized in this process.
var binding struct {
	mu    sync.Mutex
	bound bool
	index int
}

// Bind records that this process has bound GPU index (an NVML index).
// Binding the same index again is a no-op; binding a second device is an
// error.
func Bind(index int) error {
	if index < 0 {
		return fmt.Errorf("gpu: Bind(%d): negative device index", index)
	}
	binding.mu.Lock()
	defer binding.mu.Unlock()
	if binding.bound && binding.index != index {
		return fmt.Errorf("gpu: Bind(%d): this process is already bound to GPU %d", index, binding.index)
	}
	binding.bound, binding.index = true, index
	return nil
}

// BoundInKernel reports whether this process has bound a GPU, and which.
func BoundInKernel() (bool, int) {
	binding.mu.Lock()
	defer binding.mu.Unlock()
	if !binding.bound {
		return false, -1
	}
	return true, binding.index
}

// Unbind forgets the binding (the kernel's %reset).
func Unbind() {
	binding.mu.Lock()
	binding.bound, binding.index = false, 0
	binding.mu.Unlock()
}
