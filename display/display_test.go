package display

import (
	"encoding/base64"
	"image"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/goaccel/goaccel/frontend"
)

type call struct {
	kind string
	data frontend.MIMEBundle
	id   string
	wait bool
}

type recorder struct {
	mu    sync.Mutex
	calls []call
}

func (r *recorder) Stream(name, text string) {}
func (r *recorder) Display(d frontend.MIMEBundle, _ map[string]any, id string) {
	r.add(call{kind: "display", data: d, id: id})
}
func (r *recorder) UpdateDisplay(d frontend.MIMEBundle, _ map[string]any, id string) {
	r.add(call{kind: "update", data: d, id: id})
}
func (r *recorder) ClearOutput(wait bool) { r.add(call{kind: "clear", wait: wait}) }
func (r *recorder) add(c call) {
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
}

func TestHandlesUpdateTheirOwnDisplay(t *testing.T) {
	rec := &recorder{}
	defer SetSink(rec)()
	a := HTML("<b>a</b>")
	b := Markdown("# b")
	a.UpdateHTML("<b>a2</b>")
	ClearOutput(true)
	if len(rec.calls) != 4 {
		t.Fatalf("calls = %+v", rec.calls)
	}
	if rec.calls[0].id != a.ID() || rec.calls[1].id != b.ID() || a.ID() == b.ID() || a.ID() == "" {
		t.Fatalf("ids: %+v", rec.calls)
	}
	if rec.calls[2].kind != "update" || rec.calls[2].id != a.ID() || rec.calls[2].data["text/html"] != "<b>a2</b>" {
		t.Fatalf("update = %+v", rec.calls[2])
	}
	if rec.calls[3].kind != "clear" || !rec.calls[3].wait {
		t.Fatalf("clear = %+v", rec.calls[3])
	}
}

func TestNoSinkDropsQuietlyAndRestoreWorks(t *testing.T) {
	outer := &recorder{}
	restoreOuter := SetSink(outer)
	inner := &recorder{}
	restore := SetSink(inner)
	Text("inner")
	restore()
	Text("outer")
	restoreOuter()
	Text("nowhere") // no sink: must not panic
	if len(inner.calls) != 1 || len(outer.calls) != 1 {
		t.Fatalf("inner %d outer %d", len(inner.calls), len(outer.calls))
	}
	if Current() != nil {
		t.Fatal("sink left installed")
	}
}

func TestImageAndJSON(t *testing.T) {
	rec := &recorder{}
	defer SetSink(rec)()
	if _, err := Image(image.NewRGBA(image.Rect(0, 0, 3, 2))); err != nil {
		t.Fatal(err)
	}
	png, err := base64.StdEncoding.DecodeString(rec.calls[0].data["image/png"].(string))
	if err != nil || !strings.HasPrefix(string(png), "\x89PNG") {
		t.Fatalf("not a PNG: %v", err)
	}
	if rec.calls[0].data["text/plain"] != "<image 3x2>" {
		t.Fatalf("text = %v", rec.calls[0].data["text/plain"])
	}
	if _, err := JSON(map[string]any{"a": []int{1, 2}}); err != nil {
		t.Fatal(err)
	}
	tree := rec.calls[1].data["application/json"].(map[string]any)
	if len(tree["a"].([]any)) != 2 {
		t.Fatalf("json = %v", tree)
	}
	if _, err := JSON(math.NaN()); err == nil || !strings.Contains(err.Error(), "JSON") {
		t.Fatalf("NaN: %v", err)
	}
}

func TestProgressIsThrottledAndEndsComplete(t *testing.T) {
	rec := &recorder{}
	defer SetSink(rec)()
	p := NewProgress("work", 100000)
	for i := 0; i < 100000; i++ {
		p.Add(1)
	}
	p.Done()
	updates := 0
	for _, c := range rec.calls {
		if c.kind == "update" {
			updates++
		}
	}
	if updates < 2 || updates > 50 {
		t.Fatalf("%d updates for a tight loop: not throttled", updates)
	}
	last := rec.calls[len(rec.calls)-1]
	if !strings.Contains(last.data["text/plain"].(string), "100000/100000") || !strings.Contains(last.data["text/html"].(string), "<progress") {
		t.Fatalf("final = %v", last.data)
	}
}

func TestProgressNote(t *testing.T) {
	rec := &recorder{}
	defer SetSink(rec)()
	p := NewProgress("training", 10)
	p.SetNote("loss 0.25 <ok>")
	p.Set(10)
	p.Done()
	last := rec.calls[len(rec.calls)-1]
	if !strings.Contains(last.data["text/plain"].(string), "10/10 100% ") || !strings.HasSuffix(last.data["text/plain"].(string), " loss 0.25 <ok>") {
		t.Fatalf("text = %q", last.data["text/plain"])
	}
	if !strings.Contains(last.data["text/html"].(string), "loss 0.25 &lt;ok&gt;</div>") {
		t.Fatalf("html = %q", last.data["text/html"])
	}
}
