// Package values classifies the values passed to a tracker's Log the way
// every goaccel backend treats them: numbers are scalars, strings are text,
// a map of numbers is a group of scalars (TensorBoard's add_scalars layout),
// and anything else is reported with a warning that names the key. Nothing is
// dropped silently (Accelerate's TensorBoard tracker skips such values without
// a word, huggingface/accelerate#1546).
//
// It imports nothing from package tracking so that every backend subpackage
// (and package tracking itself, which imports the backends to register them)
// can use it without an import cycle.
package values

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"sync"

	"github.com/sirupsen/logrus"
)

// NoStep is the step passed to Log when the caller gave none; it equals
// tracking.NoStep.
const NoStep = -1

// Kind is what a logged value is to a tracker.
type Kind int

// The kinds of logged values.
const (
	// Unsupported values cannot be logged by the generic rules; trackers
	// warn (naming the key) and skip them.
	Unsupported Kind = iota
	// Scalar is any integer, unsigned, float or bool kind (bool as 0/1, as
	// Python's isinstance(True, int) makes Accelerate log it).
	Scalar
	// Text is a string kind.
	Text
	// Group is a map with string keys whose values are scalars; each entry
	// is its own series (TensorBoard add_scalars).
	Group
)

func (k Kind) String() string {
	switch k {
	case Scalar:
		return "scalar"
	case Text:
		return "text"
	case Group:
		return "group"
	}
	return "unsupported"
}

// Classify says what v is.
func Classify(v any) Kind {
	switch v.(type) {
	case float64, float32, int, int64, int32, int16, int8, uint, uint64, uint32, uint16, uint8, uintptr, bool:
		return Scalar
	case string:
		return Text
	case map[string]float64:
		if len(v.(map[string]float64)) == 0 {
			return Unsupported
		}
		return Group
	case nil:
		return Unsupported
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Float32, reflect.Float64, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr, reflect.Bool:
		return Scalar
	case reflect.String:
		return Text
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String || rv.Len() == 0 {
			return Unsupported
		}
		it := rv.MapRange()
		for it.Next() {
			if _, ok := Float(it.Value().Interface()); !ok {
				return Unsupported
			}
		}
		return Group
	}
	return Unsupported
}

// Float returns v as a float64 when v is a scalar.
func Float(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case int16:
		return float64(x), true
	case int8:
		return float64(x), true
	case uint:
		return float64(x), true
	case uint64:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint16:
		return float64(x), true
	case uint8:
		return float64(x), true
	case uintptr:
		return float64(x), true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case string, nil:
		return 0, false
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Float32, reflect.Float64:
		return rv.Float(), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return float64(rv.Uint()), true
	case reflect.Bool:
		if rv.Bool() {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// String returns v as a string when v is text.
func String(v any) (string, bool) {
	if s, ok := v.(string); ok {
		return s, true
	}
	rv := reflect.ValueOf(v)
	if rv.IsValid() && rv.Kind() == reflect.String {
		return rv.String(), true
	}
	return "", false
}

// Entry is one member of a Group.
type Entry struct {
	Key   string
	Value float64
}

// GroupEntries returns the members of a Group value sorted by key, and ok
// false when v is not a group.
func GroupEntries(v any) ([]Entry, bool) {
	var out []Entry
	switch m := v.(type) {
	case map[string]float64:
		out = make([]Entry, 0, len(m))
		for k, x := range m {
			out = append(out, Entry{k, x})
		}
	default:
		rv := reflect.ValueOf(v)
		if !rv.IsValid() || rv.Kind() != reflect.Map || rv.Type().Key().Kind() != reflect.String || rv.Len() == 0 {
			return nil, false
		}
		out = make([]Entry, 0, rv.Len())
		it := rv.MapRange()
		for it.Next() {
			f, ok := Float(it.Value().Interface())
			if !ok {
				return nil, false
			}
			out = append(out, Entry{it.Key().String(), f})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, true
}

// Warner reports unsupported values with a logrus warning that names the
// tracker, the key and the value's type. It warns once per (key, type) so a
// training loop does not flood the log; the first occurrence is always
// reported. The zero value is not usable; use NewWarner. Safe for concurrent
// use.
type Warner struct {
	tracker string
	log     logrus.FieldLogger
	seen    sync.Map // key+"\x00"+type → struct{}
}

// NewWarner returns a Warner for the named tracker; a nil logger means
// logrus.StandardLogger().
func NewWarner(tracker string, log logrus.FieldLogger) *Warner {
	if log == nil {
		log = logrus.StandardLogger()
	}
	return &Warner{tracker: tracker, log: log}
}

// Logger returns the logger the Warner writes to.
func (w *Warner) Logger() logrus.FieldLogger { return w.log }

// Unsupported warns that the value under key was skipped. what says what the
// tracker can log instead (e.g. "numbers, strings or maps of numbers").
func (w *Warner) Unsupported(key string, v any, what string) {
	id := fmt.Sprintf("%s\x00%T", key, v)
	if _, dup := w.seen.LoadOrStore(id, struct{}{}); dup {
		return
	}
	w.log.Warnf("%s: not logging key %q: a value of type %T is not supported (it logs %s); this value and later ones of this type under this key are skipped",
		w.tracker, key, v, what)
}

// Warnf logs an arbitrary warning prefixed with the tracker's name.
func (w *Warner) Warnf(format string, args ...any) {
	w.log.Warnf(w.tracker+": "+format, args...)
}

// LoggerFromKwargs returns kwargs["logger"] when it is a logrus.FieldLogger
// (a *logrus.Logger or *logrus.Entry), else nil.
func LoggerFromKwargs(kwargs map[string]any) logrus.FieldLogger {
	if l, ok := kwargs["logger"].(logrus.FieldLogger); ok {
		return l
	}
	return nil
}

// JSONEncodable returns the entries of vals that encoding/json can encode.
// Each other entry is left out with a warning naming the key, as
// "<what> "key" (type) cannot be stored: reason" (what names the tracker and
// the kind of value, e.g. `aim: hyperparameter`).
func JSONEncodable(vals map[string]any, what string) map[string]any {
	clean := make(map[string]any, len(vals))
	for k, v := range vals {
		if _, err := json.Marshal(v); err != nil {
			logrus.Warnf("%s %q (%T) cannot be stored: %v", what, k, v, err)
			continue
		}
		clean[k] = v
	}
	return clean
}
