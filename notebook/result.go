package notebook

import (
	"encoding/base64"
	"encoding/json"
	"image"
	"reflect"

	"github.com/goaccel/goaccel/display"
	"github.com/goaccel/goaccel/display/table"
	"github.com/goaccel/goaccel/frontend"
)

// The rich representations a value can offer by its methods.
type (
	htmler     interface{ HTML() string }
	markdowner interface{ Markdown() string }
	svger      interface{ SVG() string }
	latexer    interface{ LaTeX() string }
	pnger      interface{ PNG() []byte }
	jpeger     interface{ JPEG() []byte }
)

// resultBundle is the MIME bundle of a compiled cell's trailing values:
// text/plain as fmt prints them (a string quoted, so "" and trailing spaces
// show), plus what the value's HTML, Markdown, SVG, LaTeX, PNG, JPEG or
// JSON methods give, or a PNG for an image.Image; a value that is a table
// (package table) without HTML of its own shows as one.
func resultBundle(vals []any, multi bool) frontend.MIMEBundle {
	b := frontend.MIMEBundle{}
	if multi {
		b["text/plain"] = display.ResultText(vals...)
		return b
	}
	v := vals[0]
	b["text/plain"] = display.ResultText(v)
	if v == nil {
		return b
	}
	try := func(f func()) {
		defer func() { _ = recover() }() // a method that panics adds nothing
		f()
	}
	try(func() {
		if x, ok := v.(htmler); ok {
			b["text/html"] = x.HTML()
		}
	})
	try(func() {
		if x, ok := v.(markdowner); ok {
			b["text/markdown"] = x.Markdown()
		}
	})
	try(func() {
		if x, ok := v.(svger); ok {
			b["image/svg+xml"] = x.SVG()
		}
	})
	try(func() {
		if x, ok := v.(latexer); ok {
			b["text/latex"] = x.LaTeX()
		}
	})
	try(func() {
		if x, ok := v.(pnger); ok {
			b["image/png"] = base64.StdEncoding.EncodeToString(x.PNG())
		}
	})
	try(func() {
		if x, ok := v.(jpeger); ok {
			b["image/jpeg"] = base64.StdEncoding.EncodeToString(x.JPEG())
		}
	})
	try(func() { addJSON(b, v) })
	if _, own := b["text/html"]; !own {
		try(func() {
			// A slice of structs or of maps, a 2-D slice, a matrix: a
			// table, with its text lined up for terminals.
			if t, ok := table.Of(v); ok {
				html, text := t.HTML(), t.String()
				b["text/html"], b["text/plain"] = html, text
			}
		})
	}
	try(func() {
		if img, ok := v.(image.Image); ok && img != nil {
			if ib, err := display.ImageBundle(img); err == nil {
				b["image/png"] = ib["image/png"]
			}
		}
	})
	return b
}

// addJSON adds application/json from a JSON method returning JSON text or
// a JSON-encodable value.
func addJSON(b frontend.MIMEBundle, v any) {
	m := reflect.ValueOf(v).MethodByName("JSON")
	if !m.IsValid() || m.Type().NumIn() != 0 || m.Type().NumOut() != 1 {
		return
	}
	out := m.Call(nil)[0].Interface()
	var text []byte
	switch x := out.(type) {
	case []byte:
		text = x
	case string:
		text = []byte(x)
	default:
		raw, err := json.Marshal(x)
		if err != nil {
			return
		}
		text = raw
	}
	var tree any
	if json.Unmarshal(text, &tree) == nil {
		b["application/json"] = tree
	}
}
