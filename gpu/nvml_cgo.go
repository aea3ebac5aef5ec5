//go:build cgo

package gpu

import (
	"bytes"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// nvmlLib is the part of nvml.Interface that discovery uses; nvml.New()
// and go-nvml's mocks satisfy it.
type nvmlLib interface {
	Init() nvml.Return
	Shutdown() nvml.Return
	DeviceGetCount() (int, nvml.Return)
	DeviceGetHandleByIndex(int) (nvml.Device, nvml.Return)
}

// newLib returns the real NVML binding (replaced in tests).
var newLib = func() nvmlLib { return nvml.New() }

// Discover lists the GPUs NVML sees. Without a usable GPU it returns an
// empty list and an error wrapping ErrNoGPU; other errors mean NVML works
// but a query failed.
func Discover() ([]Device, error) { return discover(newLib()) }

func discover(lib nvmlLib) ([]Device, error) {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		// Do not call anything on lib now, not even Shutdown or
		// ret.Error(): with the library missing, go-nvml would jump to an
		// unresolved symbol and the process would die (go-nvml #82).
		return []Device{}, fmt.Errorf("%w: %s", ErrNoGPU, initFailure(ret))
	}
	defer lib.Shutdown()
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return []Device{}, fmt.Errorf("gpu: NVML DeviceGetCount: %s", ret.Error())
	}
	if n == 0 {
		return []Device{}, fmt.Errorf("%w: NVML reports no devices", ErrNoGPU)
	}
	devs := make([]Device, 0, n)
	for i := 0; i < n; i++ {
		h, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return []Device{}, fmt.Errorf("gpu: NVML DeviceGetHandleByIndex(%d): %s", i, ret.Error())
		}
		d, err := describe(i, h)
		if err != nil {
			return []Device{}, err
		}
		devs = append(devs, d)
	}
	return devs, nil
}

func describe(i int, h nvml.Device) (Device, error) {
	d := Device{Index: i, UtilizationGPU: -1, UtilizationMemory: -1, MIG: MIGUnsupported}
	var ret nvml.Return
	if d.Name, ret = h.GetName(); ret != nvml.SUCCESS {
		return d, fmt.Errorf("gpu: NVML GetName(device %d): %s", i, ret.Error())
	}
	if d.UUID, ret = h.GetUUID(); ret != nvml.SUCCESS {
		return d, fmt.Errorf("gpu: NVML GetUUID(device %d): %s", i, ret.Error())
	}
	// The rest is optional: not every device, driver or mock reports it.
	if m, ok := optional(h.GetMemoryInfo); ok {
		d.MemoryTotal, d.MemoryUsed, d.MemoryFree, d.MemoryKnown = m.Total, m.Used, m.Free, true
	}
	if u, ok := optional(h.GetUtilizationRates); ok {
		d.UtilizationGPU, d.UtilizationMemory = int(u.Gpu), int(u.Memory)
	}
	if p, ok := optional(h.GetPciInfo); ok {
		d.PCIBusID = busID(p)
	}
	if cur, ok := optional(func() (int, nvml.Return) { c, _, r := h.GetMigMode(); return c, r }); ok {
		d.MIG = MIGDisabled
		if cur == nvml.DEVICE_MIG_ENABLE {
			d.MIG = MIGEnabled
		}
	}
	return d, nil
}

// optional calls an NVML query whose absence is not an error. A query that
// panics (go-nvml's moq mocks panic on queries they do not implement, e.g.
// dgxa100's GetUtilizationRates) counts as unavailable.
func optional[T any](f func() (T, nvml.Return)) (v T, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	v, ret := f()
	return v, ret == nvml.SUCCESS
}

func busID(p nvml.PciInfo) string {
	if s := cString(p.BusId[:]); s != "" {
		return s
	}
	if s := cString(p.BusIdLegacy[:]); s != "" {
		return s
	}
	if p.Domain != 0 || p.Bus != 0 || p.Device != 0 {
		return fmt.Sprintf("%08X:%02X:%02X.0", p.Domain, p.Bus, p.Device)
	}
	return ""
}

func cString(b []uint8) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// initFailure explains a failed Init without asking NVML (see discover).
func initFailure(ret nvml.Return) string {
	switch ret {
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return "NVML library libnvidia-ml.so.1 not found (no NVIDIA driver installed)"
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return "NVIDIA driver not loaded"
	case nvml.ERROR_NO_PERMISSION:
		return "no permission to talk to the NVIDIA driver"
	case nvml.ERROR_LIB_RM_VERSION_MISMATCH:
		return "NVIDIA driver/library version mismatch (reboot or reload the driver)"
	default:
		return fmt.Sprintf("NVML Init failed (return code %d)", int32(ret))
	}
}
