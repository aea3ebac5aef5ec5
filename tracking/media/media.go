// Package media turns the values passed to a tracker's LogImages and
// LogTable into what the wandb, cometml, clearml and aim backends write:
// ParseImages accepts an image.Image, PNG bytes, a captioned image or a list
// of those and returns PNG-encoded images with their size and caption;
// NormalizeTable checks a table's columns and cells. Errors name what is
// wrong, not the key (callers add it).
//
// It imports nothing from package tracking, so every backend subpackage can
// use it without an import cycle.
package media

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"reflect"

	"github.com/goaccel/goaccel/tracking/values"
)

// Image is one image to log: its PNG encoding, its size and its caption
// (nil when none was given).
type Image struct {
	PNG           []byte
	Width, Height int
	Caption       *string
}

// PNGSignature starts every PNG file.
var PNGSignature = []byte("\x89PNG\r\n\x1a\n")

// ParseImages turns one LogImages value into images. A value is an
// image.Image, encoded PNG bytes, a captioned image []any{img, "caption"},
// or a list ([]image.Image, [][]byte, []any) of those. list reports whether
// the value was a list. Errors name what is wrong, not the key (callers add
// it).
func ParseImages(v any) (items []Image, list bool, err error) {
	if pair, ok := captionPair(v); ok {
		it, err := oneImage(pair[0])
		if err != nil {
			return nil, false, err
		}
		c := pair[1].(string)
		it.Caption = &c
		return []Image{it}, false, nil
	}
	var elems []any
	switch x := v.(type) {
	case []image.Image:
		for _, e := range x {
			elems = append(elems, e)
		}
	case [][]byte:
		for _, e := range x {
			elems = append(elems, e)
		}
	case []any:
		elems = x
	default:
		it, err := oneImage(v)
		if err != nil {
			return nil, false, err
		}
		return []Image{it}, false, nil
	}
	if len(elems) == 0 {
		return nil, true, fmt.Errorf("empty image list")
	}
	for i, e := range elems {
		var it Image
		if pair, ok := captionPair(e); ok {
			it, err = oneImage(pair[0])
			if err == nil {
				c := pair[1].(string)
				it.Caption = &c
			}
		} else {
			it, err = oneImage(e)
		}
		if err != nil {
			return nil, true, fmt.Errorf("element %d: %w", i, err)
		}
		items = append(items, it)
	}
	return items, true, nil
}

// captionPair reports whether v is []any{image, "caption"}.
func captionPair(v any) ([]any, bool) {
	p, ok := v.([]any)
	if !ok || len(p) != 2 {
		return nil, false
	}
	if _, ok := p[1].(string); !ok {
		return nil, false
	}
	switch p[0].(type) {
	case image.Image, []byte:
		return p, true
	}
	return nil, false
}

// oneImage encodes an image.Image as PNG, or checks that bytes are a PNG.
func oneImage(v any) (Image, error) {
	switch x := v.(type) {
	case nil:
		return Image{}, fmt.Errorf("nil image")
	case []byte:
		if len(x) == 0 {
			return Image{}, fmt.Errorf("empty PNG data")
		}
		if !bytes.HasPrefix(x, PNGSignature) {
			return Image{}, fmt.Errorf("bytes are not a PNG image (only PNG is accepted as encoded data)")
		}
		img, err := png.Decode(bytes.NewReader(x))
		if err != nil {
			return Image{}, fmt.Errorf("bad PNG data: %w", err)
		}
		b := img.Bounds()
		return Image{PNG: x, Width: b.Dx(), Height: b.Dy()}, nil
	case image.Image:
		if rv := reflect.ValueOf(x); rv.Kind() == reflect.Pointer && rv.IsNil() {
			return Image{}, fmt.Errorf("nil image (%T)", x)
		}
		b := x.Bounds()
		if b.Empty() {
			return Image{}, fmt.Errorf("empty image (bounds %v)", b)
		}
		var buf bytes.Buffer
		if err := png.Encode(&buf, x); err != nil {
			return Image{}, fmt.Errorf("encoding as PNG: %w", err)
		}
		return Image{PNG: buf.Bytes(), Width: b.Dx(), Height: b.Dy()}, nil
	}
	return Image{}, fmt.Errorf("unsupported value type %T (want image.Image, PNG []byte, []any{image, caption} or a list of those)", v)
}

// NormalizeTable checks a LogTable call: without columns the first row is
// the header (as Accelerate's ClearML tracker); every row must have one
// cell per column, and each cell must be nil, a bool, a number or a string.
func NormalizeTable(columns []string, data [][]any) ([]string, [][]any, error) {
	if len(columns) == 0 {
		if len(data) == 0 {
			return nil, nil, fmt.Errorf("no columns and no data")
		}
		for i, c := range data[0] {
			s, ok := c.(string)
			if !ok {
				return nil, nil, fmt.Errorf("no columns given, so row 0 is the header, but its cell %d is %T, not a string", i, c)
			}
			columns = append(columns, s)
		}
		data = data[1:]
	}
	if len(columns) == 0 {
		return nil, nil, fmt.Errorf("the table has no columns")
	}
	if len(data) == 0 {
		return nil, nil, fmt.Errorf("no data rows (columns %v)", columns)
	}
	for i, row := range data {
		if len(row) != len(columns) {
			return nil, nil, fmt.Errorf("row %d has %d values, want %d (columns %v)", i, len(row), len(columns), columns)
		}
		for j, c := range row {
			switch c.(type) {
			case nil, bool, string:
				continue
			}
			if _, _, ok := values.Number(c); !ok {
				return nil, nil, fmt.Errorf("row %d column %q: unsupported cell type %T (want nil, bool, number or string)", i, columns[j], c)
			}
		}
	}
	return columns, data, nil
}
