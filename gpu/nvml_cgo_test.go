//go:build cgo

package gpu

import (
	"errors"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
)

// recordingLib fails the test on any call after a failed Init.
type recordingLib struct {
	t     *testing.T
	init  nvml.Return
	calls []string
}

func (l *recordingLib) Init() nvml.Return { l.calls = append(l.calls, "Init"); return l.init }
func (l *recordingLib) Shutdown() nvml.Return {
	l.calls = append(l.calls, "Shutdown")
	l.t.Error("Shutdown called after a failed Init: this kills the process with a real library")
	return nvml.SUCCESS
}
func (l *recordingLib) DeviceGetCount() (int, nvml.Return) {
	l.calls = append(l.calls, "DeviceGetCount")
	l.t.Error("DeviceGetCount called after a failed Init")
	return 0, nvml.SUCCESS
}
func (l *recordingLib) DeviceGetHandleByIndex(int) (nvml.Device, nvml.Return) {
	l.calls = append(l.calls, "DeviceGetHandleByIndex")
	l.t.Error("DeviceGetHandleByIndex called after a failed Init")
	return nil, nvml.SUCCESS
}

func TestNoDriverCallsNothingAfterInit(t *testing.T) {
	for ret, want := range map[nvml.Return]string{
		nvml.ERROR_LIBRARY_NOT_FOUND: "libnvidia-ml.so.1 not found",
		nvml.ERROR_DRIVER_NOT_LOADED: "driver not loaded",
		nvml.ERROR_UNKNOWN:           "NVML Init failed (return code 999)",
	} {
		lib := &recordingLib{t: t, init: ret}
		devs, err := discover(lib)
		if !errors.Is(err, ErrNoGPU) || !strings.Contains(err.Error(), want) {
			t.Errorf("Init=%d: err = %v, want ErrNoGPU mentioning %q", ret, err, want)
		}
		if devs == nil || len(devs) != 0 {
			t.Errorf("Init=%d: devices %v, want an empty list", ret, devs)
		}
		if strings.Join(lib.calls, ",") != "Init" {
			t.Errorf("Init=%d: calls %v, want only Init", ret, lib.calls)
		}
	}
}

// The real binding with a library that does not exist: Init fails, and the
// process survives because nothing else is called (calling Shutdown here
// would kill the test binary with "undefined symbol", exit 127).
func TestRealBindingMissingLibrary(t *testing.T) {
	old := newLib
	t.Cleanup(func() { newLib = old })
	newLib = func() nvmlLib { return nvml.New(nvml.WithLibraryPath("/nonexistent/goaccel-test/libnvidia-ml.so.1")) }
	devs, err := Discover()
	if !errors.Is(err, ErrNoGPU) || !strings.Contains(err.Error(), "not found") || len(devs) != 0 {
		t.Fatalf("Discover = %v, %v", devs, err)
	}
}

func TestDiscoverDGXA100(t *testing.T) {
	server := dgxa100.New()
	server.Devices[3].(*dgxa100.Device).MemoryInfo = nvml.Memory{Total: 40 << 30, Used: 1 << 30, Free: 39 << 30}
	server.Devices[5].(*dgxa100.Device).MigMode = nvml.DEVICE_MIG_ENABLE
	devs, err := discover(server)
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 8 {
		t.Fatalf("%d devices, want 8", len(devs))
	}
	for i, d := range devs {
		md := server.Devices[i].(*dgxa100.Device)
		if d.Index != i || d.Name != "Mock NVIDIA A100-SXM4-40GB" || d.UUID != md.UUID || !strings.HasPrefix(d.UUID, "GPU-") {
			t.Errorf("device %d: %+v", i, d)
		}
		// dgxa100 has no utilization query and empty PCI bus ids.
		if d.UtilizationGPU != -1 || d.UtilizationMemory != -1 || d.PCIBusID != "" {
			t.Errorf("device %d: utilization %d/%d, bus %q; want unknown", i, d.UtilizationGPU, d.UtilizationMemory, d.PCIBusID)
		}
		if !d.MemoryKnown || d.MemoryTotal != md.MemoryInfo.Total {
			t.Errorf("device %d: memory %+v", i, d)
		}
		wantMIG := MIGDisabled
		if i == 5 {
			wantMIG = MIGEnabled
		}
		if d.MIG != wantMIG {
			t.Errorf("device %d: MIG %s, want %s", i, d.MIG, wantMIG)
		}
	}
	if d := devs[3]; d.MemoryUsed != 1<<30 || d.MemoryFree != 39<<30 {
		t.Errorf("device 3 memory: %+v", d)
	}
}

func mockDevice(name string, bus string, util *nvml.Utilization) *mock.Device {
	d := &mock.Device{
		GetNameFunc: func() (string, nvml.Return) { return name, nvml.SUCCESS },
		GetUUIDFunc: func() (string, nvml.Return) { return "GPU-" + name, nvml.SUCCESS },
		GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
			return nvml.Memory{Total: 80 << 30, Used: 3 << 30, Free: 77 << 30}, nvml.SUCCESS
		},
		GetPciInfoFunc: func() (nvml.PciInfo, nvml.Return) {
			var p nvml.PciInfo
			copy(p.BusId[:], bus)
			return p, nvml.SUCCESS
		},
		GetMigModeFunc: func() (int, int, nvml.Return) { return 0, 0, nvml.ERROR_NOT_SUPPORTED },
	}
	if util != nil {
		d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return *util, nvml.SUCCESS }
	} else {
		d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{}, nvml.ERROR_NOT_SUPPORTED }
	}
	return d
}

func mockLib(devs ...nvml.Device) *mock.Interface {
	return &mock.Interface{
		InitFunc:                   func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:               func() nvml.Return { return nvml.SUCCESS },
		DeviceGetCountFunc:         func() (int, nvml.Return) { return len(devs), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) { return devs[i], nvml.SUCCESS },
	}
}

func TestDiscoverMock(t *testing.T) {
	lib := mockLib(
		mockDevice("H100", "00000000:3B:00.0", &nvml.Utilization{Gpu: 87, Memory: 42}),
		mockDevice("L4", "", nil),
	)
	devs, err := discover(lib)
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 2 {
		t.Fatalf("%d devices", len(devs))
	}
	h := devs[0]
	if h.Name != "H100" || h.UUID != "GPU-H100" || h.PCIBusID != "00000000:3B:00.0" || h.UtilizationGPU != 87 || h.UtilizationMemory != 42 ||
		h.MemoryTotal != 80<<30 || h.MemoryUsed != 3<<30 || h.MemoryFree != 77<<30 || h.MIG != MIGUnsupported {
		t.Errorf("device 0: %+v", h)
	}
	if l := devs[1]; l.Index != 1 || l.UtilizationGPU != -1 || l.PCIBusID != "" {
		t.Errorf("device 1: %+v", l)
	}
	if len(lib.ShutdownCalls()) != 1 || len(lib.InitCalls()) != 1 {
		t.Errorf("Init/Shutdown calls: %d/%d, want 1/1", len(lib.InitCalls()), len(lib.ShutdownCalls()))
	}
	if !strings.Contains(h.String(), "GPU 0: H100 (GPU-H100), 3072/81920 MiB used") {
		t.Errorf("String = %q", h.String())
	}
}

func TestDiscoverMockErrors(t *testing.T) {
	lib := mockLib()
	if devs, err := discover(lib); !errors.Is(err, ErrNoGPU) || !strings.Contains(err.Error(), "no devices") || len(devs) != 0 {
		t.Errorf("zero devices: %v, %v", devs, err)
	}
	lib = mockLib()
	lib.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
	if _, err := discover(lib); err == nil || errors.Is(err, ErrNoGPU) || !strings.Contains(err.Error(), "DeviceGetCount") {
		t.Errorf("count failure: %v", err)
	}
	if len(lib.ShutdownCalls()) != 1 {
		t.Errorf("Shutdown not called after a successful Init")
	}
	bad := mockDevice("X", "", nil)
	bad.GetUUIDFunc = func() (string, nvml.Return) { return "", nvml.ERROR_GPU_IS_LOST }
	if _, err := discover(mockLib(bad)); err == nil || !strings.Contains(err.Error(), "GetUUID(device 0)") {
		t.Errorf("UUID failure: %v", err)
	}
	lib = mockLib(bad)
	lib.DeviceGetHandleByIndexFunc = func(int) (nvml.Device, nvml.Return) { return nil, nvml.ERROR_INVALID_ARGUMENT }
	if _, err := discover(lib); err == nil || !strings.Contains(err.Error(), "DeviceGetHandleByIndex(0)") {
		t.Errorf("handle failure: %v", err)
	}
}

func TestBusIDFallbacks(t *testing.T) {
	var p nvml.PciInfo
	if busID(p) != "" {
		t.Error("empty PciInfo gave a bus id")
	}
	copy(p.BusIdLegacy[:], "0000:3B:00.0")
	if busID(p) != "0000:3B:00.0" {
		t.Errorf("legacy: %q", busID(p))
	}
	p = nvml.PciInfo{Domain: 0, Bus: 0x3b, Device: 0}
	if busID(p) != "00000000:3B:00.0" {
		t.Errorf("from fields: %q", busID(p))
	}
}
