package fdcapture

import (
	"io"
	"strings"
	"sync"
	"testing"
)

// TestPumpStripsMarkersSplitAcrossReads feeds the pump a marker cut into
// pieces: the text around it must come through intact and the marker must be
// acknowledged, never shown.
func TestPumpStripsMarkersSplitAcrossReads(t *testing.T) {
	c := &Capture{marks: make(chan struct{}, 4)}
	var mu sync.Mutex
	var got strings.Builder
	c.SetOutput(func(_ string, p []byte) {
		mu.Lock()
		got.Write(p)
		mu.Unlock()
	})
	r, w := io.Pipe()
	c.wg.Add(1)
	go c.pump("stdout", r)
	m := string(drainMarker)
	for _, chunk := range []string{"before ", m[:5], m[5:], "middle \x00", m[:len(m)-1], m[len(m)-1:] + "after"} {
		if _, err := w.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	c.wg.Wait()
	if got.String() != "before middle \x00after" {
		t.Fatalf("output = %q", got.String())
	}
	if len(c.marks) != 2 {
		t.Fatalf("%d acknowledgements, want 2", len(c.marks))
	}
}

func TestMarkerPrefixLen(t *testing.T) {
	m := drainMarker
	for _, tc := range []struct {
		p    []byte
		want int
	}{
		{[]byte("abc"), 0},
		{append([]byte("abc"), m[:3]...), 3},
		{append([]byte("x"), m[:len(m)-1]...), len(m) - 1},
		{nil, 0},
	} {
		if got := markerPrefixLen(tc.p); got != tc.want {
			t.Errorf("markerPrefixLen(%q) = %d, want %d", tc.p, got, tc.want)
		}
	}
}
