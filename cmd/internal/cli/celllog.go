package cli

import (
	"bytes"
	"fmt"
	"sort"

	"github.com/sirupsen/logrus"
)

// cellLogFormatter formats what libraries log through logrus's standard
// logger (trackers' warnings about values they cannot record, for example)
// for the person reading the cell: "warning: message (key=value)", without
// timestamps or quoting. The standard logger writes to fd 2, which the
// kernel shows under the running cell; the kernel's own log is a separate
// logger on the original stderr.
type cellLogFormatter struct{}

func (cellLogFormatter) Format(e *logrus.Entry) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s: %s", e.Level, e.Message)
	if len(e.Data) > 0 {
		keys := make([]string, 0, len(e.Data))
		for k := range e.Data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteString(" (")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s=%v", k, e.Data[k])
		}
		b.WriteString(")")
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}
