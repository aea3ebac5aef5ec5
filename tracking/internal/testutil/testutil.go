// Package testutil holds the image fixtures the tracker backends' tests share
// (aim, clearml, cometml, wandb): a small image with distinct pixels, its PNG
// encoding and the sha256 digests the Python readers report. It is for tests
// only.
package testutil

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"image"
	"image/color"
	"image/png"
	"testing"
)

// Image is a w×h opaque RGBA image with distinct pixels; seed makes images
// of the same size differ.
func Image(w, h int, seed uint8) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.RGBA{uint8(x*40) + seed, uint8(y * 60), seed, 255})
		}
	}
	return img
}

// PNG encodes img, failing the test on error.
func PNG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// SHA256 is the hex sha256 of b.
func SHA256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
