package tracking

import "github.com/goaccel/goaccel/tracking/values"

// Value classification, shared by every backend (see package values).
type (
	// Kind is what a logged value is to a tracker.
	Kind = values.Kind
	// Warner reports skipped values naming the key.
	Warner = values.Warner
)

// The kinds of logged values.
const (
	Unsupported = values.Unsupported
	Scalar      = values.Scalar
	Text        = values.Text
	Group       = values.Group
)

// Classify says whether v is a scalar, text, a group of scalars or unsupported.
func Classify(v any) Kind { return values.Classify(v) }
