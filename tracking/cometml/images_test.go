package cometml

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"image"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/goaccel/goaccel/tracking/internal/testutil"
)

func TestImagesInOfflineArchiveReadByCometML(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("COMET_API_KEY", "")
	t.Setenv("COMET_OFFLINE_DIRECTORY", "")
	tr, err := New("proj", dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	a, b := testutil.Image(6, 4, 1), testutil.Image(3, 5, 2)
	if err := tr.Log(map[string]any{"loss": 0.5}, 2, nil); err != nil {
		t.Fatal(err)
	}
	if err := tr.LogImages(map[string]any{"pred": []any{a, "a cat"}, "grid": []any{testutil.PNG(t, b), a}}, 2, nil); err != nil {
		t.Fatal(err)
	}
	if err := tr.LogImages(map[string]any{"pred": b}, -1, nil); err != nil {
		t.Fatal(err)
	}
	if err := tr.Finish(); err != nil {
		t.Fatal(err)
	}
	rb := readWithComet(t, tr.ArchivePath())
	if len(rb.Metrics) != 1 || rb.Metrics[0]["metricValue"] != 0.5 {
		t.Errorf("metrics: %v", rb.Metrics)
	}
	type want struct {
		name    string
		step    any
		counter float64
		img     image.Image
		meta    map[string]any
	}
	// Sorted keys: grid (two images), then pred; then the stepless pred.
	wants := []want{
		{"grid", 2.0, 0, b, map[string]any{}},
		{"grid", 2.0, 1, a, map[string]any{}},
		{"pred", 2.0, 2, a, map[string]any{"caption": "a cat"}},
		{"pred", nil, 3, b, map[string]any{}},
	}
	if len(rb.Uploads) != len(wants) {
		t.Fatalf("comet_ml would upload %d files, want %d: %v", len(rb.Uploads), len(wants), rb.Uploads)
	}
	ids := map[any]bool{}
	for i, w := range wants {
		u := rb.Uploads[i]
		p := u["additional_params"].(map[string]any)
		if u["upload_type"] != "visualization" || u["endpoint"] != "recorded://visualization" || p["figName"] != w.name ||
			p["step"] != w.step || p["figCounter"] != w.counter || p["extension"] != "png" || !reflect.DeepEqual(u["metadata"], w.meta) {
			t.Errorf("upload %d: %v, want %+v", i, u, w)
		}
		ids[p["imageId"]] = true
		if u["sha256"] != testutil.SHA256(testutil.PNG(t, w.img)) {
			t.Errorf("upload %d: the archive's file is not the logged image's PNG", i)
		}
	}
	if len(ids) != len(wants) {
		t.Errorf("image ids repeat: %v", ids)
	}
	zr, err := zip.OpenReader(tr.ArchivePath())
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	pngs := 0
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, ".png") {
			pngs++
		}
	}
	if pngs != 4 {
		t.Errorf("archive holds %d PNG files, want 4", pngs)
	}
}

func TestImagesBadInputIsAnError(t *testing.T) {
	t.Setenv("COMET_API_KEY", "")
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
		{3.5, "unsupported value type float64"},
		{[]image.Image{}, "empty image list"},
		{[]byte{1, 2, 3}, "not a PNG"},
		{[]any{img, []any{img, 1}}, "element 1: unsupported value type []interface {}"},
	} {
		err := tr.LogImages(map[string]any{"good": img, "bad": c.value}, 1, nil)
		if err == nil || !strings.Contains(err.Error(), `"bad"`) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("value %#v: got %v, want an error naming \"bad\" and %q", c.value, err, c.want)
		}
	}
	if err := tr.Finish(); err != nil {
		t.Fatal(err)
	}
	if rb := readWithComet(t, tr.ArchivePath()); len(rb.Uploads) != 0 {
		t.Errorf("rejected calls logged %v", rb.Uploads)
	}
}

// TestImagesOnline: images go to write/experiment/upload-asset as multipart
// uploads, after the experiment exists, with the image's parameters.
func TestImagesOnline(t *testing.T) {
	type upload struct {
		query             map[string]string
		auth, file, ctype string
		data              []byte
	}
	var mu sync.Mutex
	var uploads []upload
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/rest/v2/write/experiment/create":
			_, _ = w.Write([]byte(`{"experimentKey":"0123456789abcdef0123456789abcdef"}`))
		case "/api/rest/v2/write/experiment/upload-asset":
			u := upload{query: map[string]string{}, auth: r.Header.Get("Authorization")}
			for k := range r.URL.Query() {
				u.query[k] = r.URL.Query().Get(k)
			}
			mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
			u.ctype = mt
			if mt == "multipart/form-data" {
				mr := multipart.NewReader(r.Body, params["boundary"])
				if p, err := mr.NextPart(); err == nil {
					u.file = p.FormName() + ":" + p.FileName()
					u.data, _ = io.ReadAll(p)
				}
			}
			mu.Lock()
			uploads = append(uploads, u)
			mu.Unlock()
			_, _ = w.Write([]byte(`{}`))
		default:
			_, _ = w.Write([]byte(`{}`))
		}
	}))
	defer srv.Close()
	t.Setenv("COMET_URL_OVERRIDE", srv.URL)
	t.Setenv("COMET_API_KEY", "secret")
	tr, err := New("proj", t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	img := testutil.Image(4, 4, 5)
	if err := tr.LogImages(map[string]any{"sample": []any{img, "cap"}}, 9, nil); err != nil {
		t.Fatal(err)
	}
	if err := tr.Finish(); err != nil {
		t.Fatal(err)
	}
	if len(uploads) != 1 {
		t.Fatalf("want 1 upload, got %v", uploads)
	}
	u := uploads[0]
	var meta map[string]any
	_ = json.Unmarshal([]byte(u.query["metadata"]), &meta)
	if u.auth != "secret" || u.ctype != "multipart/form-data" || u.file != "file:sample.png" ||
		u.query["experimentKey"] != "0123456789abcdef0123456789abcdef" || u.query["type"] != "image" ||
		u.query["fileName"] != "sample" || u.query["step"] != "9" || u.query["extension"] != ".png" || meta["caption"] != "cap" {
		t.Errorf("upload: %+v", u)
	}
	if !bytes.Equal(u.data, testutil.PNG(t, img)) {
		t.Error("uploaded bytes are not the image's PNG")
	}
}
