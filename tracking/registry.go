package tracking

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/sirupsen/logrus"
)

// Factory builds a tracker by name, as Accelerate's init_trackers does with
// cls(project_name, [logging_dir,] **init_kwargs[name]). runName is the
// project name; loggingDir is the logging directory ("" when there is none;
// it is passed to every factory, whether or not the tracker requires one);
// initKwargs is the tracker's entry of init_kwargs (may be nil). It must not
// have side effects beyond validation: the run opens in Start.
type Factory func(runName, loggingDir string, initKwargs map[string]any) (GeneralTracker, error)

// RegisterOption adjusts a registration.
type RegisterOption func(*entry)

// WithAvailability sets the check that decides whether "all" includes the
// tracker: a nil error means its backend is usable in this process.
func WithAvailability(check func() error) RegisterOption {
	return func(e *entry) { e.available = check }
}

// NotInAll keeps the tracker out of "all" (it is selected by name only).
func NotInAll() RegisterOption {
	return func(e *entry) { e.notInAll = true }
}

type entry struct {
	name        string
	requiresDir bool
	factory     Factory
	available   func() error
	notInAll    bool
}

var (
	regMu    sync.RWMutex
	registry = map[string]*entry{}
	regOrder []string // registration order of non-LoggerType names
)

// Register makes a tracker constructible by name. Registering a name again
// replaces the earlier registration (re-running a notebook cell is normal).
// Custom names are accepted by Filter and included in "all" (unless
// NotInAll); the built-in backends are registered by this package itself.
func Register(name string, requiresDir bool, factory Factory, opts ...RegisterOption) error {
	switch {
	case name == "":
		return errors.New("tracking: Register: the tracker name is empty")
	case name == string(All):
		return errors.New(`tracking: Register: "all" is reserved for selecting every available tracker`)
	case factory == nil:
		return fmt.Errorf("tracking: Register(%q): the factory is nil", name)
	}
	e := &entry{name: name, requiresDir: requiresDir, factory: factory}
	for _, o := range opts {
		o(e)
	}
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[name]; !dup && !isLoggerType(name) {
		regOrder = append(regOrder, name)
	}
	registry[name] = e
	return nil
}

// Unregister removes a registration (for tests and notebooks).
func Unregister(name string) {
	regMu.Lock()
	defer regMu.Unlock()
	delete(registry, name)
	for i, n := range regOrder {
		if n == name {
			regOrder = append(regOrder[:i:i], regOrder[i+1:]...)
			break
		}
	}
}

// Registered returns the names a tracker is registered under: LoggerTypes
// first in Accelerate's order, then the others in registration order.
func Registered() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	var out []string
	for _, l := range loggerTypes {
		if _, ok := registry[string(l)]; ok {
			out = append(out, string(l))
		}
	}
	return append(out, regOrder...)
}

func lookup(name string) (*entry, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	e, ok := registry[name]
	return e, ok
}

// choices renders the accepted names the way Accelerate prints
// LoggerType.list() (a Python list repr), followed by other registered names.
func choices() string {
	names := make([]string, 0, len(loggerTypes)+4)
	for _, l := range loggerTypes {
		names = append(names, "'"+string(l)+"'")
	}
	regMu.RLock()
	for _, n := range regOrder {
		names = append(names, "'"+n+"'")
	}
	regMu.RUnlock()
	return "[" + strings.Join(names, ", ") + "]"
}

// Spec is one tracker selected by Filter: a registered name to build, or an
// instance the caller passed.
type Spec struct {
	// Name is the tracker's name (the instance's Name() for instances).
	Name string
	// RequiresLoggingDirectory is the registered (or instance's) flag.
	RequiresLoggingDirectory bool
	// Instance is the caller's tracker, used as-is; nil for named trackers.
	Instance GeneralTracker

	factory Factory
}

// Build returns the instance, or constructs the named tracker.
func (s Spec) Build(runName, loggingDir string, initKwargs map[string]any) (GeneralTracker, error) {
	if s.Instance != nil {
		return s.Instance, nil
	}
	if s.factory == nil {
		return nil, fmt.Errorf("tracking: no tracker is registered as %q", s.Name)
	}
	t, err := s.factory(runName, loggingDir, initKwargs)
	if err != nil {
		return nil, fmt.Errorf("tracking: creating the %s tracker: %w", s.Name, err)
	}
	if t == nil {
		return nil, fmt.Errorf("tracking: the %s tracker's factory returned no tracker", s.Name)
	}
	return t, nil
}

// Filter is Accelerate's filter_trackers: it resolves log_with (names as
// strings or LoggerType, GeneralTracker instances, and slices of those) into
// the trackers to use, in order, without repeats.
//
//   - An unknown name fails with "Unsupported logging capability: X. Choose
//     between [...]".
//   - A tracker that requires a logging directory, when loggingDir is "",
//     fails with "Logging with `X` requires a `logging_dir` to be passed in."
//     This holds for "all" too (Accelerate skips the check there).
//   - "all" selects the instances given plus every registered tracker whose
//     backend is usable here (see WithAvailability); unusable ones are left
//     out with a debug log, as Accelerate does.
//   - A LoggerType with no Go backend in this build fails with an error
//     saying so, rather than being dropped.
func Filter(logWith []any, loggingDir string) ([]Spec, error) {
	items, err := flatten(logWith)
	if err != nil {
		return nil, err
	}
	var out []Spec
	seenName := map[string]bool{}
	var seenInst []GeneralTracker
	addInstance := func(t GeneralTracker) error {
		if t.Name() == "" {
			return errors.New("The implementation for this tracker class is missing the following required attributes. Please define them in the class definition: `name`")
		}
		for _, s := range seenInst {
			if sameTracker(s, t) {
				return nil
			}
		}
		seenInst = append(seenInst, t)
		out = append(out, Spec{Name: t.Name(), RequiresLoggingDirectory: t.RequiresLoggingDirectory(), Instance: t})
		return nil
	}
	addNamed := func(e *entry) error {
		if seenName[e.name] {
			return nil
		}
		if e.requiresDir && loggingDir == "" {
			return fmt.Errorf("Logging with `%s` requires a `logging_dir` to be passed in.", e.name)
		}
		seenName[e.name] = true
		out = append(out, Spec{Name: e.name, RequiresLoggingDirectory: e.requiresDir, factory: e.factory})
		return nil
	}

	all := false
	for _, it := range items {
		if name, ok := it.(string); ok {
			if name == string(All) {
				all = true
				continue
			}
			if _, ok := lookup(name); !ok && !isLoggerType(name) {
				return nil, fmt.Errorf("Unsupported logging capability: %s. Choose between %s", name, choices())
			}
		}
	}
	for _, it := range items {
		switch x := it.(type) {
		case GeneralTracker:
			if err := addInstance(x); err != nil {
				return nil, err
			}
		case string:
			if all {
				continue // "all" selects every available tracker below
			}
			e, ok := lookup(x)
			if !ok {
				return nil, fmt.Errorf("Logging with `%s` is not available in this build of goaccel: no Go backend is registered for it", x)
			}
			if err := addNamed(e); err != nil {
				return nil, err
			}
		}
	}
	if all {
		for _, name := range Registered() {
			e, ok := lookup(name)
			if !ok || e.notInAll {
				continue
			}
			if e.available != nil {
				if err := e.available(); err != nil {
					logrus.StandardLogger().Debugf("tracking: \"all\" leaves out %s: %v", name, err)
					continue
				}
			}
			if err := addNamed(e); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// flatten turns log_with into strings and GeneralTrackers.
func flatten(logWith []any) ([]any, error) {
	var out []any
	for _, it := range logWith {
		switch x := it.(type) {
		case nil:
		case string:
			out = append(out, x)
		case LoggerType:
			out = append(out, string(x))
		case GeneralTracker:
			out = append(out, x)
		case []string:
			for _, s := range x {
				out = append(out, s)
			}
		case []LoggerType:
			for _, s := range x {
				out = append(out, string(s))
			}
		case []GeneralTracker:
			for _, t := range x {
				out = append(out, t)
			}
		case []any:
			sub, err := flatten(x)
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
		default:
			err := fmt.Errorf("Unsupported logging capability: %v. Choose between %s", it, choices())
			if k := reflect.TypeOf(it).Kind(); k == reflect.Pointer || k == reflect.Struct {
				// Most likely a tracker type declared in a notebook cell: the
				// interpreter passes such a value as a plain `any` without its
				// methods, unless it is held in a GeneralTracker variable.
				err = fmt.Errorf("%w (a %T is neither a tracker name nor a tracking.GeneralTracker; for a tracker type declared in a notebook cell, pass it as a tracking.GeneralTracker value: var t tracking.GeneralTracker = &MyTracker{})", err, it)
			}
			return nil, err
		}
	}
	return out, nil
}

// sameTracker reports whether a and b are the same instance, without
// panicking on non-comparable dynamic types.
func sameTracker(a, b GeneralTracker) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	if ta != tb || !ta.Comparable() {
		return false
	}
	return a == b
}

// Init builds every selected tracker with its entry of initKwargs (keyed by
// tracker name, as Accelerate's init_kwargs). It does not start them. On an
// error no tracker is returned.
func Init(specs []Spec, projectName, loggingDir string, initKwargs map[string]map[string]any) ([]GeneralTracker, error) {
	out := make([]GeneralTracker, 0, len(specs))
	for _, s := range specs {
		t, err := s.Build(projectName, loggingDir, initKwargs[s.Name])
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}
