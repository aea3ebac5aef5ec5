package dap

import "testing"

// The expected values are those of ipykernel's murmur2_x86 (and JupyterLab's
// murmur2) for the same text and seed.
func TestMurmur2(t *testing.T) {
	for _, c := range []struct {
		text string
		seed uint32
		want uint32
	}{
		{"", 0, 0},
		{"", 1, 0x5bd15e36},
		{"a", 0, 0x92685f5e},
		{"hello", 0, 0xe56129cb},
		{"hello", 0xc70f6907, 0xc4fffffd},
		{"def f(a, b):\n    c = a + b\n    return c\n\nf(2, 3)", 0xc70f6907, 0x55d511b4},
		{"héllo wörld ✓", 0xc70f6907, 0x8bd3ea0},
	} {
		if got := murmur2([]byte(c.text), c.seed); got != c.want {
			t.Errorf("murmur2(%q, %#x) = %#x, want %#x", c.text, c.seed, got, c.want)
		}
	}
}
