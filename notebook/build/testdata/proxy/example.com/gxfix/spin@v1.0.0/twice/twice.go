// Package twice calls package spin: a package of the same module that a
// launched worker may compile itself, against the kernel's spin.
package twice

import "example.com/gxfix/spin"

// Held runs spin.Held twice over.
func Held(n *int64, rounds int64) {
	for i := 0; i < 2; i++ {
		spin.Held(n, rounds)
	}
}
