package tracking

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/goaccel/goaccel/tracking/aim"
	"github.com/goaccel/goaccel/tracking/clearml"
	"github.com/goaccel/goaccel/tracking/cometml"
	"github.com/goaccel/goaccel/tracking/wandb"
)

// registerOthers wires the wandb, comet_ml, clearml and aim backends. The
// first three can always write offline, so "all" includes them; aim needs a
// Python interpreter with the aim package (its bridge), checked once.
func registerOthers() {
	registerBuiltin(string(WandB), false, adapt(wandb.New))
	registerBuiltin(string(CometML), false, adapt(cometml.New))
	registerBuiltin(string(ClearML), false, adapt(clearml.New))
	registerBuiltin(string(Aim), true, adapt(aim.New), WithAvailability(aimAvailable))
}

// aimPython is the interpreter the aim bridge uses (the same rule as
// package aim): $GOACCEL_AIM_PYTHON, else $GOACCEL_VENV/bin/python, else python3.
func aimPython() string {
	if p := os.Getenv("GOACCEL_AIM_PYTHON"); p != "" {
		return p
	}
	if v := os.Getenv("GOACCEL_VENV"); v != "" {
		return filepath.Join(v, "bin", "python")
	}
	return "python3"
}

var aimChecks sync.Map // python path → error (nil when aim imports)

// aimAvailable reports whether the aim bridge's Python can import aim.
func aimAvailable() error {
	py := aimPython()
	if v, ok := aimChecks.Load(py); ok {
		err, _ := v.(error)
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var err error
	if out, cerr := exec.CommandContext(ctx, py, "-c", "import aim").CombinedOutput(); cerr != nil {
		err = fmt.Errorf("%s cannot import aim (pip install aim, or set GOACCEL_AIM_PYTHON): %w: %s", py, cerr, out)
	}
	aimChecks.Store(py, err)
	return err
}
