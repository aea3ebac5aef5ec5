// Package table sees Go values that are tables — slices and arrays of
// structs (or of pointers to them), slices of maps, 2-D slices, matrices
// (a Dims and an At method, as gonum's) — as rows and columns, and writes
// them as HTML and as text that lines up in a terminal: numbers
// right-aligned, long tables cut with "N rows more", wide cells shortened.
// Only the rows shown are formatted, so a table of a million rows costs
// what its first rows cost.
package table

import (
	"fmt"
	"html"
	"reflect"
	"sort"
	"strings"
	"unicode/utf8"
)

// Table is a value seen as rows and columns.
type Table struct {
	// Columns are the column names; Index says the first column is the
	// rows' index (unnamed, as pandas shows it).
	Columns []string
	Index   bool
	// Len is the number of rows; Row formats row i's cells.
	Len int
	Row func(i int) []string
	// Numeric marks the columns whose values are numbers (right-aligned).
	Numeric []bool
}

// Limits of what is shown.
const (
	// MaxRows are the rows shown of a longer table (the rest are counted).
	MaxRows = 50
	// MaxWidth is the most characters a cell shows; longer ones end in "…".
	MaxWidth = 40
)

// matrix is gonum's mat.Matrix, as far as a table needs it.
type matrix interface {
	Dims() (r, c int)
	At(i, j int) float64
}

// Of sees v as a table, or reports that it is not one.
func Of(v any) (*Table, bool) {
	if v == nil {
		return nil, false
	}
	if m, ok := v.(matrix); ok {
		return ofMatrix(m)
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, false
	}
	if rv.Len() == 0 {
		return nil, false
	}
	elem := rv.Type().Elem()
	switch {
	case structType(elem) != nil:
		return ofStructs(rv, structType(elem))
	case elem.Kind() == reflect.Map:
		return ofMaps(rv)
	case elem.Kind() == reflect.Slice || elem.Kind() == reflect.Array:
		if elem.Elem().Kind() == reflect.Uint8 && elem.Kind() == reflect.Slice {
			return nil, false // [][]byte: byte strings, not rows
		}
		return ofRows(rv)
	}
	return nil, false
}

var (
	stringerType = reflect.TypeFor[fmt.Stringer]()
	errorType    = reflect.TypeFor[error]()
)

// structType is t's struct type (through one pointer) when its values are
// rows: they have fields (a cell's own types' are often unexported: they
// are shown, as fmt shows them) and do not print themselves (as time.Time
// does); nil otherwise.
func structType(t reflect.Type) reflect.Type {
	if t.Implements(stringerType) || t.Implements(errorType) {
		return nil
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t.NumField() == 0 || reflect.PointerTo(t).Implements(stringerType) {
		return nil
	}
	return t
}

func ofStructs(rv reflect.Value, st reflect.Type) (*Table, bool) {
	var fields []int
	t := &Table{Index: true, Len: rv.Len(), Columns: []string{""}, Numeric: []bool{true}}
	for i := 0; i < st.NumField(); i++ {
		f := st.Field(i)
		if f.Name == "_" {
			continue
		}
		fields = append(fields, i)
		t.Columns = append(t.Columns, f.Name)
		t.Numeric = append(t.Numeric, isNumber(f.Type))
	}
	t.Row = func(i int) []string {
		row := []string{fmt.Sprint(i)}
		e := rv.Index(i)
		if e.Kind() == reflect.Pointer {
			if e.IsNil() {
				for range fields {
					row = append(row, "<nil>")
				}
				return row
			}
			e = e.Elem()
		}
		for _, f := range fields {
			row = append(row, cell(e.Field(f)))
		}
		return row
	}
	return t, true
}

func ofMaps(rv reflect.Value) (*Table, bool) {
	// Columns are the keys of the rows shown, in order; a row without one
	// leaves its cell empty.
	shown := min(rv.Len(), MaxRows)
	seen := map[string]bool{}
	var keys []string
	numeric := map[string]bool{}
	for i := 0; i < shown; i++ {
		m := rv.Index(i)
		iter := m.MapRange()
		for iter.Next() {
			k := fmt.Sprint(iter.Key().Interface())
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
				numeric[k] = true
			}
			numeric[k] = numeric[k] && isNumber(elemType(iter.Value()))
		}
	}
	if len(keys) == 0 {
		return nil, false
	}
	sort.Strings(keys)
	t := &Table{Index: true, Len: rv.Len(), Columns: append([]string{""}, keys...), Numeric: []bool{true}}
	for _, k := range keys {
		t.Numeric = append(t.Numeric, numeric[k])
	}
	t.Row = func(i int) []string {
		row := []string{fmt.Sprint(i)}
		m := rv.Index(i)
		byKey := map[string]reflect.Value{}
		iter := m.MapRange()
		for iter.Next() {
			byKey[fmt.Sprint(iter.Key().Interface())] = iter.Value()
		}
		for _, k := range keys {
			if v, ok := byKey[k]; ok {
				row = append(row, cell(v))
			} else {
				row = append(row, "")
			}
		}
		return row
	}
	return t, true
}

func ofRows(rv reflect.Value) (*Table, bool) {
	cols := 0
	for i := 0; i < min(rv.Len(), MaxRows); i++ {
		cols = max(cols, rv.Index(i).Len())
	}
	if cols == 0 {
		return nil, false
	}
	num := isNumber(rv.Type().Elem().Elem())
	t := &Table{Index: true, Len: rv.Len(), Columns: []string{""}, Numeric: []bool{true}}
	for j := 0; j < cols; j++ {
		t.Columns = append(t.Columns, fmt.Sprint(j))
		t.Numeric = append(t.Numeric, num)
	}
	t.Row = func(i int) []string {
		r := rv.Index(i)
		row := []string{fmt.Sprint(i)}
		for j := 0; j < cols; j++ {
			if j < r.Len() {
				row = append(row, cell(r.Index(j)))
			} else {
				row = append(row, "")
			}
		}
		return row
	}
	return t, true
}

func ofMatrix(m matrix) (*Table, bool) {
	r, c := m.Dims()
	if r == 0 || c == 0 {
		return nil, false
	}
	t := &Table{Index: true, Len: r, Columns: []string{""}, Numeric: []bool{true}}
	for j := 0; j < c; j++ {
		t.Columns = append(t.Columns, fmt.Sprint(j))
		t.Numeric = append(t.Numeric, true)
	}
	t.Row = func(i int) []string {
		row := []string{fmt.Sprint(i)}
		for j := 0; j < c; j++ {
			row = append(row, fmt.Sprint(m.At(i, j)))
		}
		return row
	}
	return t, true
}

// FromRows is a table of the given columns and rows (display.Table's,
// %whos's).
func FromRows(columns []string, rows [][]any) *Table {
	t := &Table{Columns: columns, Len: len(rows), Numeric: make([]bool, len(columns))}
	for j := range columns {
		t.Numeric[j] = len(rows) > 0
		for _, r := range rows {
			if j < len(r) && r[j] != nil && !isNumber(reflect.TypeOf(r[j])) {
				t.Numeric[j] = false
			}
		}
	}
	t.Row = func(i int) []string {
		out := make([]string, len(columns))
		for j := range columns {
			if j < len(rows[i]) {
				out[j] = cell(reflect.ValueOf(rows[i][j]))
			}
		}
		return out
	}
	return t
}

func elemType(v reflect.Value) reflect.Type {
	if v.Kind() == reflect.Interface && !v.IsNil() {
		return v.Elem().Type()
	}
	return v.Type()
}

func isNumber(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// cell is a value as a table's cell shows it: as fmt prints it.
func cell(v reflect.Value) (s string) {
	defer func() {
		if r := recover(); r != nil {
			s = fmt.Sprintf("<%v>", r)
		}
	}()
	if !v.IsValid() {
		return "<nil>"
	}
	if v.CanInterface() {
		return fmt.Sprint(v.Interface())
	}
	return fmt.Sprint(v) // an unexported field: fmt reads it
}

// shorten cuts s to MaxWidth characters, on one line.
func shorten(s string) string {
	s = strings.ReplaceAll(s, "\n", "↵")
	if utf8.RuneCountInString(s) <= MaxWidth {
		return s
	}
	r := []rune(s)
	return string(r[:MaxWidth-1]) + "…"
}

// shown are the rows shown and how many more there are.
func (t *Table) shown() ([][]string, int) {
	n := min(t.Len, MaxRows)
	rows := make([][]string, n)
	for i := range rows {
		r := t.Row(i)
		for j := range r {
			r[j] = shorten(r[j])
		}
		rows[i] = r
	}
	return rows, t.Len - n
}

// more is the line under a cut table.
func more(n int) string {
	if n == 1 {
		return "1 row more"
	}
	return fmt.Sprintf("%d rows more", n)
}

// HTML is the table as an HTML table.
func (t *Table) HTML() string {
	rows, rest := t.shown()
	var b strings.Builder
	b.WriteString(`<table class="goaccel-table">` + "\n<thead><tr>")
	for j, c := range t.Columns {
		b.WriteString(`<th style="text-align:` + align(t.Numeric[j]) + `">` + html.EscapeString(shorten(c)) + "</th>")
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	for _, r := range rows {
		b.WriteString("<tr>")
		for j, c := range r {
			tag := "td"
			if j == 0 && t.Index {
				tag = "th"
			}
			fmt.Fprintf(&b, `<%s style="text-align:%s">%s</%s>`, tag, align(t.Numeric[j]), html.EscapeString(c), tag)
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody>\n</table>\n")
	if rest > 0 {
		b.WriteString("<p>" + more(rest) + "</p>\n")
	}
	return b.String()
}

func align(numeric bool) string {
	if numeric {
		return "right"
	}
	return "left"
}

// String is the table as text whose columns line up in a fixed-width font.
func (t *Table) String() string {
	rows, rest := t.shown()
	width := make([]int, len(t.Columns))
	for j, c := range t.Columns {
		width[j] = utf8.RuneCountInString(shorten(c))
	}
	for _, r := range rows {
		for j, c := range r {
			width[j] = max(width[j], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	line := func(cells []string) {
		var l strings.Builder
		for j, c := range cells {
			if j > 0 {
				l.WriteString("  ")
			}
			pad := strings.Repeat(" ", width[j]-utf8.RuneCountInString(c))
			if t.Numeric[j] {
				l.WriteString(pad + c)
			} else {
				l.WriteString(c + pad)
			}
		}
		b.WriteString(strings.TrimRight(l.String(), " ") + "\n")
	}
	header := make([]string, len(t.Columns))
	for j, c := range t.Columns {
		header[j] = shorten(c)
	}
	line(header)
	for _, r := range rows {
		line(r)
	}
	if rest > 0 {
		b.WriteString(more(rest) + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}
