package wandb

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/tracking/internal/pyvenv"
	"github.com/goaccel/goaccel/tracking/internal/testutil"
	"github.com/goaccel/goaccel/tracking/media"
)

// mediaFields collects the history fields "<key>.<field>" of one row.
func mediaFields(row map[string]any, key string) map[string]any {
	out := map[string]any{}
	for k, v := range row {
		if f, ok := strings.CutPrefix(k, key+"."); ok {
			out[f] = v
		}
	}
	return out
}

func fieldNames(m map[string]any) []string {
	var names []string
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// checkFile verifies that a history path names a file under files/ with
// the recorded sha256 and size, and returns its content.
func checkFile(t *testing.T, runDir string, fields map[string]any, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(runDir, "files", filepath.FromSlash(rel)))
	if err != nil {
		t.Fatalf("media file %s: %v", rel, err)
	}
	sum := sha256.Sum256(b)
	if fields != nil {
		if fields["sha256"] != hex.EncodeToString(sum[:]) || fields["size"] != float64(len(b)) {
			t.Errorf("%s: recorded sha256 %v size %v, file has %x size %d", rel, fields["sha256"], fields["size"], sum, len(b))
		}
	}
	if !strings.Contains(filepath.Base(rel), "_"+hex.EncodeToString(sum[:])[:20]+".") {
		t.Errorf("%s is not named after its sha256 %x", rel, sum)
	}
	return b
}

func samePixels(t *testing.T, what string, data []byte, want image.Image) {
	t.Helper()
	got, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: not a PNG: %v", what, err)
	}
	if got.Bounds() != want.Bounds() {
		t.Fatalf("%s: bounds %v, want %v", what, got.Bounds(), want.Bounds())
	}
	b := want.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r1, g1, b1, a1 := got.At(x, y).RGBA()
			r2, g2, b2, a2 := want.At(x, y).RGBA()
			if r1 != r2 || g1 != g2 || b1 != b2 || a1 != a2 {
				t.Fatalf("%s: pixel (%d,%d) differs", what, x, y)
			}
		}
	}
}

// referenceRun logs the same media shapes with the real wandb SDK
// (testdata/wandb_reference.py) and returns its history row.
func referenceRun(t *testing.T) map[string]any {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(pyvenv.Bin(t, "python"), "testdata/wandb_reference.py", home)
	cmd.Env = offlineEnv(home)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("wandb reference run failed: %v\n%s", err, stderr.String())
	}
	hist := byType(inspect(t, strings.TrimSpace(string(out))), "history")
	if len(hist) != 1 {
		t.Fatalf("reference run has %d history rows", len(hist))
	}
	return hist[0]["item"].(map[string]any)
}

func TestMediaReadByWandb(t *testing.T) {
	dir := t.TempDir()
	tr, err := New("proj", dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	one, a, b := testutil.Image(6, 4, 1), testutil.Image(6, 4, 2), testutil.Image(6, 4, 3)
	if err := tr.Log(map[string]any{"loss": 0.5}, 3, nil); err != nil {
		t.Fatal(err)
	}
	if err := tr.LogImages(map[string]any{
		"single":  []any{one, "one"},
		"several": []any{[]any{a, "a"}, []any{testutil.PNG(t, b), "b"}},
	}, 3, nil); err != nil {
		t.Fatal(err)
	}
	if err := tr.LogTable("tab", []string{"a", "b"}, [][]any{{1, "x"}, {2.5, nil}}, 3, nil); err != nil {
		t.Fatal(err)
	}
	// No step: joins the current row and commits it, as run.log does.
	if err := tr.LogImages(map[string]any{"dir/plain": one}, -1, nil); err != nil {
		t.Fatal(err)
	}
	// No columns: the first row is the header.
	if err := tr.LogTable("hdr", nil, [][]any{{"k", "v"}, {"x", true}}, 5, nil); err != nil {
		t.Fatal(err)
	}
	if err := tr.Finish(); err != nil {
		t.Fatal(err)
	}
	runDir := tr.RunDir()
	recs := inspect(t, runDir)
	hist := byType(recs, "history")
	if len(hist) != 2 {
		t.Fatalf("want 2 history rows, got %d: %v", len(hist), hist)
	}
	row := hist[0]["item"].(map[string]any)
	if row["_step"] != 3.0 || row["loss"] != 0.5 {
		t.Errorf("row 0: %v", row)
	}

	single := mediaFields(row, "single")
	if single["_type"] != "image-file" || single["caption"] != "one" || single["width"] != 6.0 || single["height"] != 4.0 || single["format"] != "png" {
		t.Errorf("single: %v", single)
	}
	p, _ := single["path"].(string)
	if !strings.HasPrefix(p, "media/images/single_3_") || !strings.HasSuffix(p, ".png") {
		t.Errorf("single path %q not in wandb's media/images/<key>_<step>_<hash>.png layout", p)
	}
	samePixels(t, "single", checkFile(t, runDir, single, p), one)

	several := mediaFields(row, "several")
	if several["_type"] != "images/separated" || several["count"] != 2.0 || !reflect.DeepEqual(several["captions"], []any{"a", "b"}) {
		t.Errorf("several: %v", several)
	}
	names, _ := several["filenames"].([]any)
	if len(names) != 2 {
		t.Fatalf("several filenames: %v", several["filenames"])
	}
	samePixels(t, "several[0]", checkFile(t, runDir, nil, names[0].(string)), a)
	samePixels(t, "several[1]", checkFile(t, runDir, nil, names[1].(string)), b)

	plain := mediaFields(row, "dir/plain")
	if plain["_type"] != "image-file" || !strings.HasPrefix(plain["path"].(string), "media/images/dir/plain_3_") {
		t.Errorf("dir/plain: %v", plain)
	}
	if _, ok := plain["caption"]; ok {
		t.Errorf("uncaptioned image has a caption: %v", plain)
	}

	tab := mediaFields(row, "tab")
	if tab["_type"] != "table-file" || tab["ncols"] != 2.0 || tab["nrows"] != 2.0 || tab["log_mode"] != "IMMUTABLE" {
		t.Errorf("tab: %v", tab)
	}
	var content struct {
		Columns []string `json:"columns"`
		Data    [][]any  `json:"data"`
	}
	tp := tab["path"].(string)
	if !strings.HasPrefix(tp, "media/table/tab_3_") || !strings.HasSuffix(tp, ".table.json") {
		t.Errorf("table path %q", tp)
	}
	if err := json.Unmarshal(checkFile(t, runDir, tab, tp), &content); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(content.Columns, []string{"a", "b"}) || !reflect.DeepEqual(content.Data, [][]any{{1.0, "x"}, {2.5, nil}}) {
		t.Errorf("table file: %+v", content)
	}
	row1 := hist[1]["item"].(map[string]any)
	hdr := mediaFields(row1, "hdr")
	if row1["_step"] != 5.0 || hdr["ncols"] != 2.0 || hdr["nrows"] != 1.0 {
		t.Errorf("hdr row: %v", row1)
	}
	if err := json.Unmarshal(checkFile(t, runDir, hdr, hdr["path"].(string)), &content); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(content.Columns, []string{"k", "v"}) || !reflect.DeepEqual(content.Data, [][]any{{"x", true}}) {
		t.Errorf("hdr table file: %+v", content)
	}

	// Every media file is announced in a files record (what wandb sync uploads).
	announced := map[string]bool{}
	for _, f := range byType(recs, "files") {
		for _, it := range f["files"].([]any) {
			announced[it.(map[string]any)["path"].(string)] = true
		}
	}
	for _, want := range []string{p, names[0].(string), names[1].(string), plain["path"].(string), tp, hdr["path"].(string)} {
		if !announced[want] {
			t.Errorf("%s not in a files record (have %v)", want, announced)
		}
	}

	// The same shapes logged by the real SDK have the same fields, except
	// the run-table artifact references this writer does not create.
	ref := referenceRun(t)
	for _, key := range []string{"single", "several", "tab"} {
		want := mediaFields(ref, key)
		delete(want, "artifact_path")
		delete(want, "_latest_artifact_path")
		got := mediaFields(row, key)
		if !reflect.DeepEqual(fieldNames(got), fieldNames(want)) {
			t.Errorf("%s fields %v, wandb writes %v", key, fieldNames(got), fieldNames(want))
		}
		for _, f := range []string{"_type", "format", "width", "height", "caption", "count", "captions", "ncols", "nrows", "log_mode"} {
			if !reflect.DeepEqual(got[f], want[f]) {
				t.Errorf("%s.%s = %v, wandb writes %v", key, f, got[f], want[f])
			}
		}
	}
}

func TestMediaBadInputIsAnError(t *testing.T) {
	tr, err := New("proj", t.TempDir(), nil)
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
		{"a string", "unsupported value type string"},
		{[]any{}, "empty image list"},
		{[]byte("GIF89a"), "not a PNG"},
		{append([]byte{}, media.PNGSignature...), "bad PNG"},
		{[]any{img, 3}, "element 1: unsupported value type int"},
		{[]image.Image{img, nil}, "element 1: nil image"},
		{image.NewRGBA(image.Rect(0, 0, 0, 0)), "empty image"},
	} {
		err := tr.LogImages(map[string]any{"good": img, "bad": c.value}, 1, nil)
		if err == nil || !strings.Contains(err.Error(), `"bad"`) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("value %#v: got %v, want an error naming \"bad\" and %q", c.value, err, c.want)
		}
	}
	for _, c := range []struct {
		columns []string
		data    [][]any
		want    string
	}{
		{[]string{"a", "b"}, [][]any{{1, 2}, {3}}, "row 1 has 1 values, want 2"},
		{[]string{"a"}, [][]any{{[]int{1}}}, `row 0 column "a": unsupported cell type []int`},
		{[]string{"a"}, nil, "no data rows"},
		{nil, nil, "no columns and no data"},
		{nil, [][]any{{"a", 2}}, "cell 1 is int"},
		{nil, [][]any{{"a"}}, "no data rows"},
	} {
		err := tr.LogTable("tbl", c.columns, c.data, 1, nil)
		if err == nil || !strings.Contains(err.Error(), `"tbl"`) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("table %v %v: got %v, want an error naming \"tbl\" and %q", c.columns, c.data, err, c.want)
		}
	}
	if err := tr.Finish(); err != nil {
		t.Fatal(err)
	}
	// Nothing of the rejected calls was logged, not even the good key.
	if h := byType(inspect(t, tr.RunDir()), "history"); len(h) != 0 {
		t.Errorf("rejected calls logged %v", h)
	}
	if _, err := os.Stat(filepath.Join(tr.RunDir(), "files", "media")); !os.IsNotExist(err) {
		t.Errorf("rejected calls wrote media files (%v)", err)
	}
}

func TestUploadSafe(t *testing.T) {
	for in, want := range map[string]string{"a/b": "a/b", "/abs/x": "abs/x", "../up": "__/up", "a/./b": "a/_/b", "x..y": "x..y"} {
		if got := uploadSafe(in); got != want {
			t.Errorf("uploadSafe(%q) = %q, want %q", in, got, want)
		}
	}
}
