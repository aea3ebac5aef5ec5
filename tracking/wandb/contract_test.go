package wandb_test

import (
	"testing"

	"github.com/goaccel/goaccel/tracking"
	"github.com/goaccel/goaccel/tracking/wandb"
)

// The tracker satisfies the root package's contract (checked from an
// external test package, so wandb itself never imports tracking).
var _ tracking.GeneralTracker = (*wandb.Tracker)(nil)
var _ tracking.ImageLogger = (*wandb.Tracker)(nil)
var _ tracking.TableLogger = (*wandb.Tracker)(nil)

func TestContractAttributes(t *testing.T) {
	tr, err := wandb.New("run", t.TempDir(), nil)
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
