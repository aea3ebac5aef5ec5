package aim

import (
	"image"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/tracking/internal/pyvenv"
	"github.com/goaccel/goaccel/tracking/internal/testutil"
)

// rgbaDigest is the sha256 of an opaque RGBA image's pixels, as PIL's
// tobytes() gives them.
func rgbaDigest(img *image.RGBA) string { return testutil.SHA256(img.Pix) }

func findImages(seqs []imageSeq, name string, ctx map[string]any) *imageSeq {
	for i, s := range seqs {
		if s.Name != name || len(s.Context) != len(ctx) {
			continue
		}
		match := true
		for k, v := range ctx {
			if s.Context[k] != v {
				match = false
			}
		}
		if match {
			return &seqs[i]
		}
	}
	return nil
}

func TestImagesReadByAim(t *testing.T) {
	t.Setenv("GOACCEL_AIM_PYTHON", pyvenv.Python(t))
	repo := t.TempDir()
	tr, err := New("imgs", repo, quietKwargs())
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	a, b, c := testutil.Image(6, 4, 1), testutil.Image(3, 5, 2), testutil.Image(2, 2, 3)
	// Accelerate's shapes: an image, or an (image, caption) pair.
	if err := tr.LogImages(map[string]any{"plain": a, "pair": []any{testutil.PNG(t, b), "a cat"}}, 2, nil); err != nil {
		t.Fatal(err)
	}
	// A list, with Accelerate's aim_image / track kwargs.
	kw := map[string]any{
		"aim_image": map[string]any{"caption": "default", "optimize": true},
		"track":     map[string]any{"context": map[string]any{"subset": "val"}, "epoch": 1},
	}
	if err := tr.LogImages(map[string]any{"grid": []any{c, []any{a, "first"}}}, 3, kw); err != nil {
		t.Fatal(err)
	}
	if err := tr.LogImages(map[string]any{"plain": b}, -1, nil); err != nil {
		t.Fatal(err)
	}
	if err := tr.Finish(); err != nil {
		t.Fatal(err)
	}
	runs := readWithAim(t, repo)
	if len(runs) != 1 {
		t.Fatalf("aim lists %d runs", len(runs))
	}
	imgs := runs[0].Images
	plain := findImages(imgs, "plain", nil)
	if plain == nil || len(plain.Steps) != 2 || plain.Steps[0] != 2 || plain.Steps[1] != 3 {
		t.Fatalf("plain: %+v (all %+v)", plain, imgs)
	}
	v := plain.Values[0]
	if v.List || len(v.Images) != 1 || v.Images[0].Width != 6 || v.Images[0].Height != 4 || v.Images[0].Caption != "" || v.Images[0].RGBASHA256 != rgbaDigest(a) {
		t.Errorf("plain@2: %+v", v)
	}
	if got := plain.Values[1].Images[0]; got.RGBASHA256 != rgbaDigest(b) {
		t.Errorf("plain@3 (no step: Aim numbered it): %+v", got)
	}
	pair := findImages(imgs, "pair", nil)
	if pair == nil || pair.Steps[0] != 2 || pair.Values[0].Images[0].Caption != "a cat" || pair.Values[0].Images[0].RGBASHA256 != rgbaDigest(b) {
		t.Errorf("pair: %+v", pair)
	}
	grid := findImages(imgs, "grid", map[string]any{"subset": "val"})
	if grid == nil || len(grid.Values) != 1 || grid.Steps[0] != 3 || !grid.Values[0].List || len(grid.Values[0].Images) != 2 {
		t.Fatalf("grid: %+v (all %+v)", grid, imgs)
	}
	g := grid.Values[0].Images
	if g[0].Caption != "default" || g[0].RGBASHA256 != rgbaDigest(c) || g[1].Caption != "first" || g[1].RGBASHA256 != rgbaDigest(a) {
		t.Errorf("grid images: %+v", g)
	}
}

func TestImagesBadInputIsAnError(t *testing.T) {
	t.Setenv("GOACCEL_AIM_PYTHON", pyvenv.Python(t))
	repo := t.TempDir()
	tr, err := New("bad", repo, quietKwargs())
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
		{map[string]int{}, "unsupported value type map[string]int"},
		{[][]byte{}, "empty image list"},
		{[]byte("\x89PNG\r\n\x1a\nbroken"), "bad PNG"},
		{[]any{img, nil}, "element 1: nil image"},
	} {
		err := tr.LogImages(map[string]any{"good": img, "bad": c.value}, 1, nil)
		if err == nil || !strings.Contains(err.Error(), `"bad"`) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("value %#v: got %v, want an error naming \"bad\" and %q", c.value, err, c.want)
		}
	}
	for _, kw := range []map[string]any{
		{"aim_image": "x"},
		{"aim_image": map[string]any{"colour": 1}},
		{"aim_image": map[string]any{"quality": "high"}},
		{"track": map[string]any{"epoch": 1.5}},
		{"track": map[string]any{"step": 1}},
	} {
		if err := tr.LogImages(map[string]any{"k": img}, 1, kw); err == nil {
			t.Errorf("kwargs %v accepted", kw)
		}
	}
	if err := tr.Finish(); err != nil {
		t.Fatal(err)
	}
	if runs := readWithAim(t, repo); len(runs) != 1 || len(runs[0].Images) != 0 {
		t.Errorf("rejected calls logged images: %+v", runs)
	}
}
