// Package display is the rich-output API for notebook cells and for compiled
// code running under a cell (trackers, launchers): HTML, Markdown, SVG,
// images, JSON, LaTeX, JavaScript and text, shown under the running cell,
// with handles that update an output in place.
//
// Output goes to the process's current Sink. The kernel installs a sink for
// each running cell and a launched worker installs one that forwards to the
// kernel, the way os.Stdout is one process-wide destination: code deep inside
// a compiled package can show output without a value threaded through every
// call. With no sink installed, calls are silently dropped (a plain program
// importing a package that displays something keeps working).
package display

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"sync"

	"github.com/google/uuid"

	"github.com/goaccel/goaccel/display/table"
	"github.com/goaccel/goaccel/frontend"
)

// sinkMu guards sink. The sink is process-wide on purpose (see the package
// comment); everything else is a value.
var (
	sinkMu sync.RWMutex
	sink   frontend.Publisher
)

// SetSink makes p the destination of display calls and returns a function
// that restores the previous one.
func SetSink(p frontend.Publisher) (restore func()) {
	sinkMu.Lock()
	prev := sink
	sink = p
	sinkMu.Unlock()
	return func() {
		sinkMu.Lock()
		sink = prev
		sinkMu.Unlock()
	}
}

// current returns the installed sink or nil.
func current() frontend.Publisher {
	sinkMu.RLock()
	defer sinkMu.RUnlock()
	return sink
}

// Publish sends data to the installed sink: display_data (with displayID,
// which may be empty), or with update update_display_data for an earlier
// display of displayID. It reports whether a sink took it. It serves
// other display protocols (GoNB's gonbui) that name their own display ids.
func Publish(data frontend.MIMEBundle, metadata map[string]any, displayID string, update bool) bool {
	p := current()
	if p == nil {
		return false
	}
	if update {
		p.UpdateDisplay(data, metadata, displayID)
	} else {
		p.Display(data, metadata, displayID)
	}
	return true
}

// Handle names one displayed output so it can be replaced in place.
type Handle struct {
	id string
}

// ID returns the display_id the frontend knows this output by.
func (h *Handle) ID() string { return h.id }

// Update replaces the output with data (update_display_data).
func (h *Handle) Update(data frontend.MIMEBundle) {
	if p := current(); p != nil {
		p.UpdateDisplay(data, nil, h.id)
	}
}

// UpdateHTML, UpdateMarkdown, UpdateSVG and UpdateText are Update for one MIME type.
func (h *Handle) UpdateHTML(html string)   { h.Update(frontend.MIMEBundle{"text/html": html}) }
func (h *Handle) UpdateMarkdown(md string) { h.Update(frontend.MIMEBundle{"text/markdown": md}) }
func (h *Handle) UpdateSVG(svg string) {
	h.Update(frontend.MIMEBundle{"image/svg+xml": svg})
}
func (h *Handle) UpdateText(text string) { h.Update(frontend.MIMEBundle{"text/plain": text}) }

// Display shows data under the running cell and returns a handle for Update.
func Display(data frontend.MIMEBundle) *Handle {
	return DisplayWithMetadata(data, nil)
}

// DisplayWithMetadata is Display with display_data metadata (e.g. image size).
func DisplayWithMetadata(data frontend.MIMEBundle, metadata map[string]any) *Handle {
	h := &Handle{id: uuid.NewString()}
	if p := current(); p != nil {
		p.Display(data, metadata, h.id)
	}
	return h
}

// ClearOutput clears the cell's output; with wait the clear happens when the
// next output arrives, which avoids flicker in animations.
func ClearOutput(wait bool) {
	if p := current(); p != nil {
		p.ClearOutput(wait)
	}
}

// HTML shows an HTML fragment.
func HTML(html string) *Handle { return Display(frontend.MIMEBundle{"text/html": html}) }

// Markdown shows Markdown text.
func Markdown(md string) *Handle { return Display(frontend.MIMEBundle{"text/markdown": md}) }

// SVG shows an SVG document.
func SVG(svg string) *Handle { return Display(frontend.MIMEBundle{"image/svg+xml": svg}) }

// Table shows v as a table: a slice or array of structs (or of pointers
// to them), a slice of maps, a 2-D slice, or a matrix (Dims and At, as
// gonum's). A value that is not one shows as fmt prints it.
func Table(v any) *Handle {
	if t, ok := table.Of(v); ok {
		return Display(frontend.MIMEBundle{"text/html": t.HTML(), "text/plain": t.String()})
	}
	return Text(fmt.Sprint(v))
}

// Text shows plain text as a display (not a stream).
func Text(text string) *Handle { return Display(frontend.MIMEBundle{"text/plain": text}) }

// LaTeX shows LaTeX math, e.g. `$$\int_0^1 x\,dx$$`.
func LaTeX(tex string) *Handle { return Display(frontend.MIMEBundle{"text/latex": tex}) }

// JavaScript runs JavaScript in the frontend (where it allows that).
func JavaScript(js string) *Handle {
	return Display(frontend.MIMEBundle{"application/javascript": js})
}

// PNG shows PNG-encoded bytes.
func PNG(data []byte) *Handle {
	return Display(frontend.MIMEBundle{"image/png": base64.StdEncoding.EncodeToString(data)})
}

// JPEG shows JPEG-encoded bytes.
func JPEG(data []byte) *Handle {
	return Display(frontend.MIMEBundle{"image/jpeg": base64.StdEncoding.EncodeToString(data)})
}

// Image shows an image.Image, encoded as PNG.
func Image(img image.Image) (*Handle, error) {
	b, err := ImageBundle(img)
	if err != nil {
		return nil, err
	}
	return Display(b), nil
}

// ImageBundle encodes img as a PNG MIME bundle.
func ImageBundle(img image.Image) (frontend.MIMEBundle, error) {
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("display: encoding image as PNG: %w", err)
	}
	b := img.Bounds()
	return frontend.MIMEBundle{
		"image/png":  base64.StdEncoding.EncodeToString(buf.Bytes()),
		"text/plain": fmt.Sprintf("<image %dx%d>", b.Dx(), b.Dy()),
	}, nil
}

// JSON shows v as an interactive JSON tree (application/json) with an
// indented text/plain fallback. v must be JSON-encodable.
func JSON(v any) (*Handle, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("display: value is not JSON-encodable: %w", err)
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return nil, fmt.Errorf("display: re-reading JSON: %w", err)
	}
	pretty, _ := json.MarshalIndent(tree, "", "  ")
	return Display(frontend.MIMEBundle{"application/json": tree, "text/plain": string(pretty)}), nil
}

// Current returns the installed sink, or nil. A launched worker's runtime
// uses it to keep forwarding displays while it installs its own cell sink.
func Current() frontend.Publisher { return current() }
