package accelerate

import (
	"errors"
	"fmt"
	"strings"

	"github.com/goaccel/goaccel/tracking"
	"github.com/goaccel/goaccel/tracking/livechart"
)

// EnvLiveChart turns the automatic live chart off when false ("0", "no",
// "false", ...); see WithLiveChart.
const EnvLiveChart = "GOACCEL_LIVECHART"

// ProjectConfiguration is Accelerate's ProjectConfiguration: LoggingDir
// ("" = ProjectDir, as Accelerate's set_directories) is where trackers that
// need a directory write; with AutomaticCheckpointNaming, SaveState("")
// writes ProjectDir/checkpoints/checkpoint_{Iteration} (Iteration counts up
// from the given value) and keeps the newest TotalLimit of them (0: all),
// and LoadState("") loads the newest.
type ProjectConfiguration struct {
	ProjectDir                string
	LoggingDir                string
	AutomaticCheckpointNaming bool
	TotalLimit                int
	Iteration                 int
}

// WithLogWith selects the experiment trackers (Accelerate's log_with): "all",
// tracker names (strings, []string, tracking.LoggerType), and
// tracking.GeneralTracker instances (a tracker type defined in a cell
// included), in any mix. The selection is checked by NewAccelerator, with
// Accelerate's errors: "Unsupported logging capability: X. Choose between
// [...]" and "Logging with `X` requires a `logging_dir` to be passed in."
// (for "all" too, unlike Accelerate). Repeated calls add to the selection.
func WithLogWith(items ...any) Option {
	return func(c *config) error {
		c.logWith = append(c.logWith, items...)
		return nil
	}
}

// WithProjectDir sets Accelerate's project_dir; the logging directory
// defaults to it.
func WithProjectDir(dir string) Option {
	return func(c *config) error {
		c.projectDir = dir
		return nil
	}
}

// WithProjectConfiguration sets Accelerate's project_config: the project
// directory, the logging directory (LoggingDir "" = ProjectDir) and the
// checkpoint naming of SaveState and LoadState.
func WithProjectConfiguration(pc ProjectConfiguration) Option {
	return func(c *config) error {
		if pc.TotalLimit < 0 || pc.Iteration < 0 {
			return fmt.Errorf("accelerate: ProjectConfiguration: TotalLimit (%d) and Iteration (%d) must not be negative", pc.TotalLimit, pc.Iteration)
		}
		if pc.AutomaticCheckpointNaming && pc.ProjectDir == "" {
			return fmt.Errorf("accelerate: ProjectConfiguration: AutomaticCheckpointNaming needs a ProjectDir (checkpoints go to ProjectDir/checkpoints)")
		}
		c.projectDir, c.loggingDir = pc.ProjectDir, pc.LoggingDir
		c.autoCheckpoint, c.totalLimit, c.iteration = pc.AutomaticCheckpointNaming, pc.TotalLimit, pc.Iteration
		return nil
	}
}

// WithLiveChart turns the live chart InitTrackers adds on the main process
// on or off (default on, unless GOACCEL_LIVECHART is false). The option wins
// over the environment.
func WithLiveChart(on bool) Option {
	return func(c *config) error {
		c.liveChart = &on
		return nil
	}
}

// trackerConfig resolves the tracker options of c: the logging directory,
// the selection (checked now, as Accelerate's __init__ does) and whether the
// live chart is wanted.
func trackerConfig(c *config) (specs []tracking.Spec, loggingDir string, live bool, err error) {
	loggingDir = c.loggingDir
	if loggingDir == "" {
		loggingDir = c.projectDir
	}
	if len(c.logWith) > 0 {
		if specs, err = tracking.Filter(c.logWith, loggingDir); err != nil {
			return nil, "", false, err
		}
	}
	live = true
	if v, ok := c.lookupEnv(EnvLiveChart); ok && strings.TrimSpace(v) != "" {
		b, perr := strToBool(strings.TrimSpace(v))
		if perr != nil {
			return nil, "", false, fmt.Errorf("accelerate: invalid %s: %w", EnvLiveChart, perr)
		}
		live = b
	}
	if c.liveChart != nil {
		live = *c.liveChart
	}
	return specs, loggingDir, live, nil
}

// ProjectDir is the project directory ("" when none was given).
func (a *Accelerator) ProjectDir() string { return a.projectDir }

// LoggingDir is the trackers' logging directory ("" when none was given).
func (a *Accelerator) LoggingDir() string { return a.loggingDir }

// InitTrackers is Accelerate's init_trackers: on the main process it builds
// the trackers selected with WithLogWith (each named one with
// initKwargs[name]; instances as they are), appends the live chart (see
// WithLiveChart; initKwargs["livechart"] is its options, e.g. "title",
// "interval"), starts them all, then stores config (when non-nil) in each.
// Every logged metric is then drawn under the running cell; in a launched
// worker the launcher forwards rank 0's display calls to the kernel.
//
// On the other processes nothing is built or started: each selected
// tracker is a tracking.NoOp of the same name, so GetTracker and the logging
// methods work on every rank. Calling it twice on one Accelerator is an
// error (Accelerate would append duplicates); after a failed call no tracker
// is kept.
func (a *Accelerator) InitTrackers(projectName string, config map[string]any, initKwargs map[string]map[string]any) error {
	a.trkMu.Lock()
	defer a.trkMu.Unlock()
	if a.trackersInit {
		return fmt.Errorf("accelerate: InitTrackers was already called on this Accelerator (trackers %v); call EndTraining and create a new Accelerator to start another run", names(a.trackers))
	}
	if !a.IsMainProcess() {
		ts := make([]tracking.GeneralTracker, len(a.trackerSpecs))
		for i, s := range a.trackerSpecs {
			ts[i] = tracking.NewNoOp(s.Name)
		}
		a.setTrackers(ts, len(ts))
		return nil
	}
	ts, err := tracking.Init(a.trackerSpecs, projectName, a.loggingDir, initKwargs)
	if err != nil {
		return fmt.Errorf("accelerate: InitTrackers: %w", err)
	}
	user := len(ts)
	if a.liveChart && !hasTracker(ts, livechart.Name) {
		lc, err := livechart.New(projectName, a.loggingDir, initKwargs[livechart.Name])
		if err != nil {
			return fmt.Errorf("accelerate: InitTrackers: the live chart: %w", err)
		}
		ts = append(ts, lc)
	}
	m := tracking.NewMulti(a.logger, ts...)
	if err := m.Start(); err != nil {
		return fmt.Errorf("accelerate: InitTrackers: %w", errors.Join(err, m.Finish()))
	}
	if config != nil {
		if err := m.StoreInitConfiguration(config); err != nil {
			return fmt.Errorf("accelerate: InitTrackers: %w", errors.Join(err, m.Finish()))
		}
	}
	a.setTrackers(ts, user)
	return nil
}

// setTrackers records the trackers; the first user of them are the ones
// the caller selected (LogImages and LogTable go to those only, so that the
// live chart does not warn about images it cannot draw). Callers hold trkMu.
func (a *Accelerator) setTrackers(ts []tracking.GeneralTracker, user int) {
	a.trackers = ts
	a.multi = tracking.NewMulti(a.logger, ts...)
	a.userMulti = tracking.NewMulti(a.logger, ts[:user]...)
	a.trackersInit = true
}

func hasTracker(ts []tracking.GeneralTracker, name string) bool {
	for _, t := range ts {
		if t.Name() == name {
			return true
		}
	}
	return false
}

func names(ts []tracking.GeneralTracker) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name()
	}
	return out
}

// Trackers returns the trackers InitTrackers set up, in order (the live
// chart last); NoOps on the processes other than the main one; nil before
// InitTrackers.
func (a *Accelerator) Trackers() []tracking.GeneralTracker {
	a.trkMu.Lock()
	defer a.trkMu.Unlock()
	return append([]tracking.GeneralTracker(nil), a.trackers...)
}

// multis returns the live fan-outs, nil on the processes that must not log
// or before InitTrackers.
func (a *Accelerator) multis() (all, user *tracking.Multi) {
	if !a.IsMainProcess() {
		return nil, nil
	}
	a.trkMu.Lock()
	defer a.trkMu.Unlock()
	return a.multi, a.userMulti
}

func flatKwargs(logKwargs map[string]map[string]any) map[string]any {
	if logKwargs == nil {
		return nil
	}
	m := make(map[string]any, len(logKwargs))
	for k, v := range logKwargs {
		m[k] = v
	}
	return m
}

// Log is Accelerate's log: on the main process it logs values at step
// (tracking.NoStep for none) to every tracker, each with its entry of
// logKwargs (keyed by tracker name; may be nil). Elsewhere, and before
// InitTrackers, it does nothing. One failing tracker does not stop the
// others; the errors are joined, each naming its tracker.
func (a *Accelerator) Log(values map[string]any, step int, logKwargs map[string]map[string]any) error {
	m, _ := a.multis()
	if m == nil {
		return nil
	}
	if err := m.Log(values, step, flatKwargs(logKwargs)); err != nil {
		return fmt.Errorf("accelerate: Log: %w", err)
	}
	return nil
}

// LogImages logs images (tag → image.Image, []image.Image or PNG bytes) on
// the main process to every selected tracker that can record images (the
// others are named in a warning, once).
func (a *Accelerator) LogImages(values map[string]any, step int, logKwargs map[string]map[string]any) error {
	_, m := a.multis()
	if m == nil {
		return nil
	}
	if err := m.LogImages(values, step, flatKwargs(logKwargs)); err != nil {
		return fmt.Errorf("accelerate: LogImages: %w", err)
	}
	return nil
}

// LogTable logs a table on the main process to every selected tracker that
// can record tables (the others are named in a warning, once).
func (a *Accelerator) LogTable(name string, columns []string, data [][]any, step int, logKwargs map[string]map[string]any) error {
	_, m := a.multis()
	if m == nil {
		return nil
	}
	if err := m.LogTable(name, columns, data, step, flatKwargs(logKwargs)); err != nil {
		return fmt.Errorf("accelerate: LogTable: %w", err)
	}
	return nil
}

// GetTracker is Accelerate's get_tracker: the tracker named name (its
// underlying object, Tracker(), when unwrap), or "{name} is not an
// available tracker stored inside the `Accelerator`." for an unknown name.
// Where there are no trackers (before InitTrackers, and on the processes
// other than the main one) it returns a tracking.NoOp named name, which
// accepts every call, for any name; unwrapping a NoOp returns the NoOp
// itself (it has no underlying object).
func (a *Accelerator) GetTracker(name string, unwrap bool) (any, error) {
	a.trkMu.Lock()
	ts := a.trackers
	a.trkMu.Unlock()
	var t tracking.GeneralTracker
	if a.IsMainProcess() && len(ts) > 0 {
		for _, x := range ts {
			if x.Name() == name {
				t = x
				break
			}
		}
		if t == nil {
			return nil, fmt.Errorf("%s is not an available tracker stored inside the `Accelerator`.", name)
		}
	} else {
		t = tracking.NewNoOp(name)
	}
	if !unwrap {
		return t, nil
	}
	if _, ok := t.(*tracking.NoOp); ok {
		return t, nil
	}
	return t.Tracker(), nil
}

// finishTrackers finishes (and so flushes) every tracker once.
func (a *Accelerator) finishTrackers() error {
	a.trkMu.Lock()
	m := a.multi
	done := a.trackersDone
	a.trackersDone = true
	a.trkMu.Unlock()
	if m == nil || done {
		return nil
	}
	if err := m.Finish(); err != nil {
		return fmt.Errorf("accelerate: EndTraining: %w", err)
	}
	return nil
}
