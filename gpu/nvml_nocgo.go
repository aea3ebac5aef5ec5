//go:build !cgo

package gpu

import "fmt"

// Discover reports no GPU: NVML needs cgo, and this binary was built with
// CGO_ENABLED=0.
func Discover() ([]Device, error) {
	return []Device{}, fmt.Errorf("%w: goaccel was built without cgo, which NVML requires", ErrNoGPU)
}
