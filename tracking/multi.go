package tracking

import (
	"errors"
	"fmt"
	"sync"

	"github.com/sirupsen/logrus"
)

// Flusher is implemented by trackers that can write buffered values now.
type Flusher interface {
	Flush() error
}

// Multi fans every call out to several trackers and collects their errors
// (errors.Join, each wrapped with the tracker's name): one failing tracker
// never stops the others. It is itself a GeneralTracker named "multi", and
// its kwargs arguments are keyed by tracker name, like Accelerate's
// log_kwargs: Log(values, step, map[string]any{"tensorboard": map[string]any{...}}).
type Multi struct {
	trackers []GeneralTracker
	log      logrus.FieldLogger
	warned   sync.Map // tracker name + capability already warned about
}

var (
	_ GeneralTracker = (*Multi)(nil)
	_ ImageLogger    = (*Multi)(nil)
	_ TableLogger    = (*Multi)(nil)
)

// NewMulti returns a Multi over trackers. Warnings go to log (nil means
// logrus.StandardLogger()).
func NewMulti(log logrus.FieldLogger, trackers ...GeneralTracker) *Multi {
	if log == nil {
		log = logrus.StandardLogger()
	}
	return &Multi{trackers: append([]GeneralTracker(nil), trackers...), log: log}
}

// Trackers returns the trackers in order.
func (m *Multi) Trackers() []GeneralTracker { return append([]GeneralTracker(nil), m.trackers...) }

// Get returns the tracker named name, or Accelerate's get_tracker error.
// With no trackers at all (a non-main rank) it returns a NoOp, as Accelerate
// returns its blank tracker.
func (m *Multi) Get(name string) (GeneralTracker, error) {
	if len(m.trackers) == 0 {
		return NewNoOp(name), nil
	}
	for _, t := range m.trackers {
		if t.Name() == name {
			return t, nil
		}
	}
	return nil, fmt.Errorf("%s is not an available tracker stored inside the `Accelerator`.", name)
}

// Name returns "multi".
func (m *Multi) Name() string { return "multi" }

// RequiresLoggingDirectory reports whether any tracker requires one.
func (m *Multi) RequiresLoggingDirectory() bool {
	for _, t := range m.trackers {
		if t.RequiresLoggingDirectory() {
			return true
		}
	}
	return false
}

// MainProcessOnly reports whether every tracker is main-process only.
func (m *Multi) MainProcessOnly() bool {
	for _, t := range m.trackers {
		if !t.MainProcessOnly() {
			return false
		}
	}
	return true
}

// Tracker returns the trackers.
func (m *Multi) Tracker() any { return m.Trackers() }

func (m *Multi) each(op string, f func(GeneralTracker) error) error {
	var errs []error
	for _, t := range m.trackers {
		if err := f(t); err != nil {
			errs = append(errs, fmt.Errorf("%s tracker: %s: %w", t.Name(), op, err))
		}
	}
	return errors.Join(errs...)
}

func kwargsFor(kwargs map[string]any, name string) map[string]any {
	if kwargs == nil {
		return nil
	}
	if m, ok := kwargs[name].(map[string]any); ok {
		return m
	}
	return nil
}

// Start starts every tracker.
func (m *Multi) Start() error { return m.each("start", GeneralTracker.Start) }

// StoreInitConfiguration stores config in every tracker.
func (m *Multi) StoreInitConfiguration(config map[string]any) error {
	return m.each("store_init_configuration", func(t GeneralTracker) error { return t.StoreInitConfiguration(config) })
}

// Log logs to every tracker; logKwargs maps a tracker name to its kwargs.
func (m *Multi) Log(values map[string]any, step int, logKwargs map[string]any) error {
	return m.each("log", func(t GeneralTracker) error { return t.Log(values, step, kwargsFor(logKwargs, t.Name())) })
}

// LogImages logs to every tracker that can record images; the others are
// named in a warning (once each).
func (m *Multi) LogImages(values map[string]any, step int, logKwargs map[string]any) error {
	return m.each("log_images", func(t GeneralTracker) error {
		il, ok := t.(ImageLogger)
		if !ok {
			m.warnOnce(t.Name(), "images")
			return nil
		}
		return il.LogImages(values, step, kwargsFor(logKwargs, t.Name()))
	})
}

// LogTable logs to every tracker that can record tables; the others are
// named in a warning (once each).
func (m *Multi) LogTable(name string, columns []string, data [][]any, step int, logKwargs map[string]any) error {
	return m.each("log_table", func(t GeneralTracker) error {
		tl, ok := t.(TableLogger)
		if !ok {
			m.warnOnce(t.Name(), "tables")
			return nil
		}
		return tl.LogTable(name, columns, data, step, kwargsFor(logKwargs, t.Name()))
	})
}

func (m *Multi) warnOnce(name, what string) {
	if _, dup := m.warned.LoadOrStore(name+"\x00"+what, true); !dup {
		m.log.Warnf("tracking: the %s tracker cannot log %s; they are not recorded there", name, what)
	}
}

// Flush flushes every tracker that buffers.
func (m *Multi) Flush() error {
	return m.each("flush", func(t GeneralTracker) error {
		if f, ok := t.(Flusher); ok {
			return f.Flush()
		}
		return nil
	})
}

// Finish finishes every tracker (all of them, even after an error).
func (m *Multi) Finish() error { return m.each("finish", GeneralTracker.Finish) }
