package display

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/goaccel/goaccel/display/table"
)

// ResultText is the text/plain form of a cell's result, the values of its
// trailing expression: as fmt prints them, a string quoted (so that "" and
// trailing spaces show), several values joined by ", ", and a value that
// is a table (package table) without HTML of its own lined up as one.
func ResultText(vals ...any) string {
	if len(vals) != 1 {
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = plainText(v)
		}
		return strings.Join(parts, ", ")
	}
	v := vals[0]
	if _, html := v.(interface{ HTML() string }); !html && v != nil {
		if s, ok := tableText(v); ok {
			return s
		}
	}
	return plainText(v)
}

// PrintResult prints vals as a notebook shows a cell's result (its
// text/plain form, ResultText) on standard output: what a program exported
// from a notebook prints where the notebook showed a result.
func PrintResult(vals ...any) { fmt.Println(ResultText(vals...)) }

func tableText(v any) (s string, ok bool) {
	defer func() {
		if recover() != nil {
			s, ok = "", false
		}
	}()
	t, ok := table.Of(v)
	if !ok {
		return "", false
	}
	return t.String(), true
}

// plainText is one value as a result's text/plain.
func plainText(v any) (s string) {
	defer func() {
		if r := recover(); r != nil {
			s = fmt.Sprintf("<value could not be formatted: %v>", r)
		}
	}()
	if v == nil {
		return "<nil>"
	}
	switch v.(type) {
	case fmt.Stringer, error, fmt.Formatter:
		return fmt.Sprint(v)
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.String {
		return fmt.Sprintf("%q", rv.String())
	}
	return fmt.Sprint(v)
}
