package clearml

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/tracking/internal/testutil"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
)

func eventsOfType(s session, typ string) []map[string]any {
	var out []map[string]any
	for _, e := range s.Scalars {
		if e["type"] == typ {
			out = append(out, e)
		}
	}
	return out
}

func TestMediaImportedByClearML(t *testing.T) {
	_, hook := test.NewNullLogger()
	logrus.AddHook(hook)
	defer logrus.StandardLogger().ReplaceHooks(make(logrus.LevelHooks))
	t.Setenv("CLEARML_PROJECT", "")
	t.Setenv("CLEARML_TASK", "")
	t.Setenv("CLEARML_CACHE_DIR", "")

	dir := t.TempDir()
	tr, err := New("my proj", dir, map[string]any{"task_name": "run?1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	a, b, c := testutil.Image(6, 4, 1), testutil.Image(6, 4, 2), testutil.Image(3, 5, 3)
	if err := tr.LogImages(map[string]any{"eval_pred": a, "samples": []any{testutil.PNG(t, b), []any{c, "cap"}}}, 7, nil); err != nil {
		t.Fatal(err)
	}
	if err := tr.LogImages(map[string]any{"eval_pred": b}, -1, map[string]any{"max_image_history": 1}); err != nil {
		t.Fatal(err)
	}
	if err := tr.LogTable("eval_preds", []string{"id", "label", "score"}, [][]any{{1, "cat", 0.5}, {2, nil, true}}, 7, nil); err != nil {
		t.Fatal(err)
	}
	if err := tr.LogTable("hdr", nil, [][]any{{"k"}, {"x"}}, -1, nil); err != nil {
		t.Fatal(err)
	}
	if err := tr.Finish(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(messagesOf(hook), `caption "cap" not stored`) {
		t.Errorf("no warning about the dropped caption: %s", messagesOf(hook))
	}

	s := readWithClearML(t, tr.SessionZip())
	imgs := eventsOfType(s, "training_debug_image")
	if len(imgs) != 4 {
		t.Fatalf("want 4 debug images, got %d: %v", len(imgs), imgs)
	}
	// The key ClearML's own report_image gives these images (checked
	// against clearml 2.1's offline session): project and "<task>.<id>"
	// quoted, then metrics/<title>/<series>/<title>_<series>_<n:08d>.
	prefix := "my proj/run%3F1." + tr.TaskID() + "/metrics/"
	type want struct {
		metric, variant, file string
		iter                  float64
		img                   image.Image
	}
	wants := []want{
		{"pred", "eval", "pred/eval/pred_eval_00000000.png", 7, a},
		{"samples", "train_0", "samples/train_0/samples_train_0_00000000.png", 7, b},
		{"samples", "train_1", "samples/train_1/samples_train_1_00000000.png", 7, c},
		// max_image_history=1: the second image of pred/eval reuses name 0.
		{"pred", "eval", "pred/eval/pred_eval_00000000.png", 0, b},
	}
	for i, w := range wants {
		e := imgs[i]
		if e["metric"] != w.metric || e["variant"] != w.variant || e["iter"] != w.iter || e["task"] != "imported-task" {
			t.Errorf("image %d: %v, want %+v", i, e, w)
		}
		// clearml re-targets the key to the imported task and points the
		// url at the uploaded copy.
		wantKey := strings.Replace(prefix, "."+tr.TaskID()+"/", ".imported-task/", 1) + w.file
		if e["key"] != wantKey || e["url"] != s.Remote+"/"+wantKey {
			t.Errorf("image %d: key %v url %v, want key %s", i, e["key"], e["url"], wantKey)
		}
	}
	// clearml uploaded the session's files under the re-targeted keys (the
	// last write of a reused name wins, as with ClearML's own rotation).
	imported := strings.Replace(prefix, "."+tr.TaskID()+"/", ".imported-task/", 1)
	wantUploads := map[string]string{
		imported + "pred/eval/pred_eval_00000000.png":             testutil.SHA256(testutil.PNG(t, b)),
		imported + "samples/train_0/samples_train_0_00000000.png": testutil.SHA256(testutil.PNG(t, b)),
		imported + "samples/train_1/samples_train_1_00000000.png": testutil.SHA256(testutil.PNG(t, c)),
	}
	if !reflect.DeepEqual(s.Uploads, wantUploads) {
		t.Errorf("uploads %v, want %v", s.Uploads, wantUploads)
	}
	data, err := os.ReadFile(filepath.Join(tr.SessionFolder(), "data", filepath.FromSlash(prefix+"samples/train_1/samples_train_1_00000000.png")))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := png.Decode(bytes.NewReader(data)); err != nil || got.Bounds().Dx() != 3 || got.Bounds().Dy() != 5 {
		t.Errorf("stored sample: %v %v", err, got)
	}

	plots := eventsOfType(s, "plot")
	if len(plots) != 2 {
		t.Fatalf("want 2 plots, got %v", plots)
	}
	if plots[0]["metric"] != "preds" || plots[0]["variant"] != "eval" || plots[0]["iter"] != 7.0 || plots[1]["iter"] != 0.0 {
		t.Errorf("plot events: %v", plots)
	}
	var plot struct {
		Data []struct {
			Type   string `json:"type"`
			Header struct {
				Values []any `json:"values"`
			} `json:"header"`
			Cells struct {
				Values [][]any `json:"values"`
			} `json:"cells"`
		} `json:"data"`
		Layout map[string]any `json:"layout"`
	}
	if err := json.Unmarshal([]byte(plots[0]["plot_str"].(string)), &plot); err != nil {
		t.Fatal(err)
	}
	if len(plot.Data) != 1 || plot.Data[0].Type != "table" ||
		!reflect.DeepEqual(plot.Data[0].Header.Values, []any{"id", "label", "score"}) ||
		!reflect.DeepEqual(plot.Data[0].Cells.Values, [][]any{{1.0, 2.0}, {"cat", nil}, {0.5, true}}) ||
		plot.Layout["title.text"] != "preds" || plot.Layout["title"] != "eval" {
		t.Errorf("plot: %+v", plot)
	}
	if err := json.Unmarshal([]byte(plots[1]["plot_str"].(string)), &plot); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(plot.Data[0].Header.Values, []any{"k"}) || !reflect.DeepEqual(plot.Data[0].Cells.Values, [][]any{{"x"}}) {
		t.Errorf("header-row table: %v", plots[1]["plot_str"])
	}
}

func messagesOf(h *test.Hook) string {
	var s []string
	for _, e := range h.AllEntries() {
		s = append(s, e.Message)
	}
	return strings.Join(s, "\n")
}

func TestMediaBadInputIsAnError(t *testing.T) {
	tr, err := New("p", "", map[string]any{"cache_dir": t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	img := testutil.Image(2, 2, 0)
	if err := tr.LogImages(map[string]any{"x": img}, 0, nil); err == nil {
		t.Error("LogImages before Start accepted")
	}
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	var nilRGBA *image.RGBA
	for _, c := range []struct {
		value any
		want  string
	}{
		{nil, "nil image"},
		{nilRGBA, "nil image"},
		{42, "unsupported value type int"},
		{[]any{}, "empty image list"},
		{[]byte("not a png"), "not a PNG"},
		{[]image.Image{img, nil}, "element 1: nil image"},
	} {
		err := tr.LogImages(map[string]any{"good": img, "bad": c.value}, 1, nil)
		if err == nil || !strings.Contains(err.Error(), `"bad"`) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("value %#v: got %v, want an error naming \"bad\" and %q", c.value, err, c.want)
		}
	}
	if err := tr.LogImages(map[string]any{"a": img}, 1, map[string]any{"max_image_history": "x"}); err == nil {
		t.Error("bad max_image_history accepted")
	}
	for _, c := range []struct {
		columns []string
		data    [][]any
		want    string
	}{
		{[]string{"a", "b"}, [][]any{{1, 2}, {3}}, "row 1 has 1 values, want 2"},
		{[]string{"a"}, [][]any{{map[string]int{}}}, `row 0 column "a": unsupported cell type`},
		{[]string{"a"}, nil, "no data rows"},
		{nil, nil, "no columns and no data"},
	} {
		err := tr.LogTable("tbl", c.columns, c.data, 1, nil)
		if err == nil || !strings.Contains(err.Error(), `"tbl"`) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("table %v %v: got %v, want an error naming \"tbl\" and %q", c.columns, c.data, err, c.want)
		}
	}
	if err := tr.Finish(); err != nil {
		t.Fatal(err)
	}
	s := readWithClearML(t, tr.SessionZip())
	if len(s.Scalars) != 0 {
		t.Errorf("rejected calls logged %v", s.Scalars)
	}
	if entries, _ := os.ReadDir(filepath.Join(tr.SessionFolder(), "data")); len(entries) != 0 {
		t.Errorf("rejected calls wrote files: %v", entries)
	}
}

func TestDebugSampleNames(t *testing.T) {
	if got := replaceSlash(`a/b\c#d?`); got != "a.slash.b.slash.c0x23d0x3f" {
		t.Errorf("replaceSlash: %s", got)
	}
	if got := quotePath("a b/é?[x]"); got != "a b/%C3%A9%3F[x]" {
		t.Errorf("quotePath: %s", got)
	}
	long := strings.Repeat("x", 300) + ".png"
	if got := limitFolderLength(long); len(got) != 36 || !strings.HasSuffix(got, ".png") {
		t.Errorf("limitFolderLength: %s", got)
	}
}
