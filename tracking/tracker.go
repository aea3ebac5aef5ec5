// Package tracking implements Accelerate's experiment-tracker layer for Go:
// the GeneralTracker contract, the LoggerType names, and the selection rules
// (filter by name, "all", logging-directory checks). Each backend lives in its
// own subpackage (tensorboard, mlflow, dvclive, wandb, cometml, clearml, aim,
// livechart) and satisfies GeneralTracker without importing this package.
package tracking

// NoStep is passed as the step when the caller gave none (Accelerate's
// step=None).
const NoStep = -1

// GeneralTracker is the contract every tracker honours, built-in or defined
// in a notebook cell. It mirrors Accelerate's GeneralTracker: Start is where
// a backend opens its run (so construction has no side effects), and only the
// main process calls it when MainProcessOnly is true.
type GeneralTracker interface {
	// Name is the tracker's LoggerType name ("tensorboard", ...) or a custom one.
	Name() string
	// RequiresLoggingDirectory says whether the tracker needs a logging_dir.
	RequiresLoggingDirectory() bool
	// MainProcessOnly says whether only the main process may use it.
	MainProcessOnly() bool
	// Tracker returns the underlying object (a writer, a client, a run).
	Tracker() any
	Start() error
	// StoreInitConfiguration records hyperparameters.
	StoreInitConfiguration(values map[string]any) error
	// Log records values at step (NoStep when none was given). kwargs are the
	// tracker's entry of Accelerator.Log's log_kwargs (may be nil).
	Log(values map[string]any, step int, kwargs map[string]any) error
	// Finish flushes and closes the run.
	Finish() error
}

// ImageLogger is implemented by trackers that can record images.
// values maps a tag to an image.Image, a []image.Image, or encoded PNG bytes.
type ImageLogger interface {
	LogImages(values map[string]any, step int, kwargs map[string]any) error
}

// TableLogger is implemented by trackers that can record tables.
type TableLogger interface {
	LogTable(name string, columns []string, data [][]any, step int, kwargs map[string]any) error
}
