package tracking

import (
	"github.com/goaccel/goaccel/tracking/dvclive"
	"github.com/goaccel/goaccel/tracking/livechart"
	"github.com/goaccel/goaccel/tracking/mlflow"
	"github.com/goaccel/goaccel/tracking/tensorboard"
)

// The built-in backends are registered here, not in their subpackages: a
// subpackage importing package tracking to register itself would be an
// import cycle (this package imports them). Each backend subpackage follows
// one convention: New(runName, loggingDir string, initKwargs map[string]any)
// (*Tracker, error), and *Tracker has GeneralTracker's method set.

// adapt turns a backend's New into a Factory; a nil *T with an error must
// not become a non-nil interface.
func adapt[T GeneralTracker](newFn func(string, string, map[string]any) (T, error)) Factory {
	return func(runName, loggingDir string, kw map[string]any) (GeneralTracker, error) {
		t, err := newFn(runName, loggingDir, kw)
		if err != nil {
			return nil, err
		}
		return t, nil
	}
}

func init() {
	registerBuiltin(string(TensorBoard), true, adapt(tensorboard.New))
	registerBuiltin(string(DVCLive), false, adapt(dvclive.New))
	registerBuiltin(string(MLflow), false, adapt(mlflow.New), WithAvailability(mlflow.Available))
	registerBuiltin(LiveChart, false, adapt(livechart.New), NotInAll())
	registerOthers()
}

// registerBuiltin registers a built-in; the names are valid constants, so
// Register cannot fail here.
func registerBuiltin(name string, requiresDir bool, f Factory, opts ...RegisterOption) {
	_ = Register(name, requiresDir, f, opts...)
}
