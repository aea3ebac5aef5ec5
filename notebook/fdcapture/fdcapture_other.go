//go:build !unix

package fdcapture

// Redirect is not supported on this platform.
func Redirect() (*Capture, error) { return nil, ErrUnsupported }

// Restore does nothing on this platform.
func (c *Capture) Restore() error { return nil }

// NullStdin does nothing on this platform.
func NullStdin() error { return nil }
