//go:build nvml

package gpu

import "testing"

// TestRealNVML needs a machine with an NVIDIA driver and at least one GPU;
// it fails otherwise. Run it there with: go test -tags nvml -run RealNVML ./gpu
func TestRealNVML(t *testing.T) {
	devs, err := Discover()
	if err != nil {
		t.Fatalf("Discover on a GPU machine: %v", err)
	}
	if len(devs) == 0 {
		t.Fatal("no devices")
	}
	for _, d := range devs {
		t.Logf("%s; utilization %d%%/%d%%, MIG %s", d, d.UtilizationGPU, d.UtilizationMemory, d.MIG)
		if d.Name == "" || len(d.UUID) < 5 || d.UUID[:4] != "GPU-" && d.UUID[:4] != "MIG-" {
			t.Errorf("device %d: name %q uuid %q", d.Index, d.Name, d.UUID)
		}
		if !d.MemoryKnown || d.MemoryTotal == 0 || d.MemoryUsed+d.MemoryFree > d.MemoryTotal+(1<<30) {
			t.Errorf("device %d: memory total %d used %d free %d", d.Index, d.MemoryTotal, d.MemoryUsed, d.MemoryFree)
		}
		if d.PCIBusID == "" {
			t.Errorf("device %d: empty PCI bus id", d.Index)
		}
	}
}
