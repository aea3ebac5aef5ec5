package cometml_test

import (
	"testing"

	"github.com/goaccel/goaccel/tracking"
	"github.com/goaccel/goaccel/tracking/cometml"
)

// The tracker satisfies the root package's contract (checked from an
// external test package, so cometml itself never imports tracking).
var _ tracking.GeneralTracker = (*cometml.Tracker)(nil)
var _ tracking.ImageLogger = (*cometml.Tracker)(nil)

func TestContractAttributes(t *testing.T) {
	tr, err := cometml.New("run", t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Tracker() == nil {
		t.Fatal("Tracker() is nil")
	}
	if err := tr.Log(map[string]any{"x": 1}, tracking.NoStep, nil); err == nil {
		t.Fatal("Log before Start accepted")
	}
	if err := tr.Finish(); err != nil {
		t.Fatalf("Finish before Start: %v", err)
	}
}
