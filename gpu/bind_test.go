package gpu

import (
	"errors"
	"strings"
	"testing"
)

func TestBind(t *testing.T) {
	Unbind()
	t.Cleanup(Unbind)
	if ok, idx := BoundInKernel(); ok || idx != -1 {
		t.Fatalf("BoundInKernel before Bind = %v, %d", ok, idx)
	}
	if err := Bind(-1); err == nil {
		t.Fatal("Bind(-1) accepted")
	}
	if err := Bind(2); err != nil {
		t.Fatal(err)
	}
	if err := Bind(2); err != nil {
		t.Fatalf("re-binding the same device: %v", err)
	}
	if err := Bind(3); err == nil || !strings.Contains(err.Error(), "already bound to GPU 2") {
		t.Fatalf("Bind of a second device: %v", err)
	}
	if ok, idx := BoundInKernel(); !ok || idx != 2 {
		t.Fatalf("BoundInKernel = %v, %d", ok, idx)
	}
	Unbind()
	if ok, _ := BoundInKernel(); ok {
		t.Fatal("still bound after Unbind")
	}
}

// Discover never panics and, when it finds nothing, says so with ErrNoGPU
// and an empty (non-nil) list. On this machine (no driver, or no cgo) that
// is the expected outcome; on a GPU machine it must list devices.
func TestDiscoverThisMachine(t *testing.T) {
	devs, err := Discover()
	if err != nil {
		if !errors.Is(err, ErrNoGPU) {
			t.Fatalf("Discover: %v (not ErrNoGPU)", err)
		}
		if devs == nil || len(devs) != 0 {
			t.Fatalf("Discover without GPU returned %v, want an empty list", devs)
		}
		return
	}
	if len(devs) == 0 {
		t.Fatal("Discover returned no devices and no error")
	}
}
