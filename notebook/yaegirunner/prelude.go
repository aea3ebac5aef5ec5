package yaegirunner

import (
	"encoding/base64"
	"encoding/json"
	"image"
	"reflect"

	"github.com/goaccel/goaccel/display"
)

// rtPath is the import path of the engine's compiled hooks inside the
// interpreter (not a real Go package).
const rtPath = "goaccel.internal/gxrt"

// prelude is interpreted once per interpreter. Its names start with _gx so
// they do not collide with the user's; its imports are aliased for the same
// reason. Formatting happens here, inside the interpreter, because compiled
// code sees interpreted named types without their methods.
const prelude = `import (
	_gxcmp "cmp"
	_gxfmt "fmt"
	_gxrt "goaccel.internal/gxrt"
)

func _gxText(_gxa interface{}) (_gxs string) {
	defer func() {
		if _gxr := recover(); _gxr != nil {
			_gxs = _gxfmt.Sprint(_gxa)
		}
	}()
	if _gxa == nil {
		return "<nil>"
	}
	if _gxq, _gxok := _gxa.(string); _gxok {
		return _gxfmt.Sprintf("%q", _gxq)
	}
	return _gxfmt.Sprint(_gxa)
}

func _gxShow(_gxvs ...interface{}) {
	_gxs := ""
	for _gxi, _gxa := range _gxvs {
		if _gxi > 0 {
			_gxs += ", "
		}
		_gxs += _gxText(_gxa)
	}
	_gxrt.Text(_gxs)
}

func _gxGoPanic(_gxr interface{}) {
	_gxrt.GoPanic(_gxfmt.Sprint(_gxr))
}

func _gxMin[_gxT _gxcmp.Ordered](_gxa, _gxb _gxT) _gxT {
	if _gxb < _gxa {
		return _gxb
	}
	return _gxa
}

func _gxMax[_gxT _gxcmp.Ordered](_gxa, _gxb _gxT) _gxT {
	if _gxb > _gxa {
		return _gxb
	}
	return _gxa
}
`

// showProbes format the value of a cell's trailing expression, held in the
// global _gxv. Each is compiled on its own: one that does not compile (the
// value has no such method) is skipped. Calling methods on the variable
// avoids converting interpreted values to interfaces, which yaegi v0.16.1
// gets wrong for types with methods.
var showProbes = []string{
	`_gxrt.Text(_gxfmt.Sprintf("%q", _gxv+""))`,
	`_gxrt.Text(_gxfmt.Sprint(_gxv))`,
	`_gxrt.MIME("text/html", _gxv.HTML())`,
	`_gxrt.MIME("text/markdown", _gxv.Markdown())`,
	`_gxrt.MIME("image/svg+xml", _gxv.SVG())`,
	`_gxrt.MIME("text/latex", _gxv.LaTeX())`,
	`_gxrt.Bytes("image/png", _gxv.PNG())`,
	`_gxrt.Bytes("image/jpeg", _gxv.JPEG())`,
	`_gxrt.JSONText(string(_gxv.JSON()))`,
	`_gxrt.JSON(_gxv.JSON())`,
	`_gxrt.Image(_gxv)`,
}

func encodeBase64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// setJSON adds application/json for a JSON-encodable value.
func setJSON(cs *cellState, v any) {
	raw, err := json.Marshal(v)
	if err != nil {
		return
	}
	setJSONText(cs, string(raw))
}

// setJSONText adds application/json from JSON text.
func setJSONText(cs *cellState, s string) {
	var tree any
	if err := json.Unmarshal([]byte(s), &tree); err != nil {
		return
	}
	cs.setResult("application/json", tree)
}

// setImage adds image/png for an image.Image.
func setImage(cs *cellState, img image.Image) {
	if img == nil {
		return
	}
	b, err := display.ImageBundle(img)
	if err != nil {
		return
	}
	cs.setResult("image/png", b["image/png"])
}

// clearValue is the builtin clear for maps and slices.
func clearValue(x any) {
	v := reflect.ValueOf(x)
	switch v.Kind() {
	case reflect.Map, reflect.Slice:
		v.Clear()
	}
}

// kindOf classifies a value for range rewriting: "int", "func" or "".
func kindOf(x any) string {
	v := reflect.ValueOf(x)
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "int"
	case reflect.Func:
		return "func"
	}
	return ""
}
