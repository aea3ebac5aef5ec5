package tracking

// NoOp is a tracker that accepts every call and records nothing. The
// Accelerator hands it out on processes that must not log (non-main ranks),
// so user code can call every method, LogImages and LogTable included,
// without checking the rank (Accelerate's blank GeneralTracker lacks some,
// huggingface/accelerate#3777).
type NoOp struct {
	// TrackerName is returned by Name; "" means "blank".
	TrackerName string
}

// NewNoOp returns a NoOp answering to name.
func NewNoOp(name string) *NoOp { return &NoOp{TrackerName: name} }

var (
	_ GeneralTracker = (*NoOp)(nil)
	_ ImageLogger    = (*NoOp)(nil)
	_ TableLogger    = (*NoOp)(nil)
)

// Name returns TrackerName, or "blank".
func (n *NoOp) Name() string {
	if n == nil || n.TrackerName == "" {
		return "blank"
	}
	return n.TrackerName
}

// RequiresLoggingDirectory returns false.
func (*NoOp) RequiresLoggingDirectory() bool { return false }

// MainProcessOnly returns false: a NoOp is safe everywhere.
func (*NoOp) MainProcessOnly() bool { return false }

// Tracker returns nil: there is no underlying run.
func (*NoOp) Tracker() any { return nil }

// Start does nothing.
func (*NoOp) Start() error { return nil }

// StoreInitConfiguration does nothing.
func (*NoOp) StoreInitConfiguration(map[string]any) error { return nil }

// Log does nothing.
func (*NoOp) Log(map[string]any, int, map[string]any) error { return nil }

// LogImages does nothing.
func (*NoOp) LogImages(map[string]any, int, map[string]any) error { return nil }

// LogTable does nothing.
func (*NoOp) LogTable(string, []string, [][]any, int, map[string]any) error { return nil }

// Flush does nothing.
func (*NoOp) Flush() error { return nil }

// Finish does nothing.
func (*NoOp) Finish() error { return nil }

// ForProcess returns trackers as a process should use them: on the main
// process all of them; elsewhere the MainProcessOnly ones are replaced by a
// NoOp of the same name (so Get by name still works on every rank).
func ForProcess(trackers []GeneralTracker, isMain bool) []GeneralTracker {
	out := make([]GeneralTracker, len(trackers))
	for i, t := range trackers {
		if !isMain && t.MainProcessOnly() {
			out[i] = NewNoOp(t.Name())
		} else {
			out[i] = t
		}
	}
	return out
}
