//go:build !cgo

package gpu

import (
	"errors"
	"strings"
	"testing"
)

func TestDiscoverWithoutCgo(t *testing.T) {
	devs, err := Discover()
	if !errors.Is(err, ErrNoGPU) || !strings.Contains(err.Error(), "without cgo") || devs == nil || len(devs) != 0 {
		t.Fatalf("Discover = %v, %v", devs, err)
	}
}
