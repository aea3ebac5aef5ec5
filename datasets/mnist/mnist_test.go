package mnist

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoad(t *testing.T) {
	train, test, err := Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if train.N() != 60000 || test.N() != 10000 || len(train.Images) != 60000*Pixels {
		t.Fatalf("%d training and %d test examples", train.N(), test.N())
	}
	// The first training image is a 5, the first test image a 7 (as in
	// every MNIST distribution).
	if train.Labels[0] != 5 || test.Labels[0] != 7 {
		t.Errorf("first labels %d, %d", train.Labels[0], test.Labels[0])
	}
	var ink float32
	for _, p := range train.Image(0) {
		if p < 0 || p > 1 {
			t.Fatalf("pixel %v outside [0, 1]", p)
		}
		ink += p
	}
	if ink < 50 || ink > 150 {
		t.Errorf("the first image's ink %v", ink)
	}
}

// Module names the version goaccel's go.mod requires.
func TestModuleMatchesGoMod(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	path, version, _ := strings.Cut(Module, "@")
	if !strings.Contains(string(b), path+" "+version) {
		t.Errorf("go.mod does not require %s %s", path, version)
	}
}
