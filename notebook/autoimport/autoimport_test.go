package autoimport

import (
	"context"
	"errors"
	"go/build"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// writeModule makes a module under dir with files rel → content.
func writeModule(t *testing.T, dir, path string, files map[string]string) Module {
	t.Helper()
	root := filepath.Join(dir, filepath.Base(path))
	files["go.mod"] = "module " + path + "\n\ngo 1.22\n"
	for rel, content := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return Module{Path: path, Version: "v1.0.0", Dir: root}
}

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	ml := writeModule(t, dir, "example.com/ml", map[string]string{
		"pkg/context/context.go": "package context\n\ntype Context struct{}\n\nfunc New() *Context { return nil }\n",
		"backends/backends.go":   "package backends\n\nfunc New() (int, error) { return 0, nil }\n",
		"internal/hidden/h.go":   "package backends\n\nfunc Hidden() {}\n",
		"cmd/tool/main.go":       "package main\n\nfunc main() {}\n",
	})
	exp := writeModule(t, dir, "golang.example/exp", map[string]string{
		"constraints/c.go": "package constraints\n\ntype Float interface{ ~float64 }\n\ntype Integer interface{ ~int }\n",
	})
	other := writeModule(t, dir, "example.org/other", map[string]string{
		"backends/b.go": "package backends\n\nfunc Other() {}\n",
		"dup/b.go":      "package constraints\n\ntype Float interface{ ~float32 }\n",
	})
	loaded := map[string]bool{"example.com/ml": true}
	r := &Resolver{
		GoRoot:    build.Default.GOROOT,
		Preferred: func(name string) string { return map[string]string{"rand": "math/rand"}[name] },
		Modules: func(context.Context) ([]Module, error) {
			return []Module{ml, exp, other}, nil
		},
		Loaded: func() map[string]bool { return loaded },
	}
	ctx := context.Background()
	for _, c := range []struct {
		name string
		sels []string
		want string
	}{
		{"strings", []string{"Split"}, "strings"},
		{"rand", []string{"Intn"}, "math/rand"},     // math/rand, not math/rand/v2 nor crypto/rand
		{"rand", []string{"Reader"}, "crypto/rand"}, // the only one with Reader
		{"context", []string{"New"}, "example.com/ml/pkg/context"},
		{"context", []string{"WithCancel"}, "context"},
		{"backends", []string{"New"}, "example.com/ml/backends"}, // a loaded module first
		{"backends", []string{"Other"}, "example.org/other/backends"},
		{"hidden", nil, ""}, // internal packages are not importable
		{"nothing", []string{"X"}, ""},
	} {
		got, err := r.Resolve(ctx, c.name, c.sels)
		if err != nil || got != c.want {
			t.Errorf("Resolve(%s, %v) = %q, %v; want %q", c.name, c.sels, got, err, c.want)
		}
	}
	// Two loaded candidates (the standard library's context and the
	// module's) both declare Context: an error that lists them.
	_, err := r.Resolve(ctx, "context", []string{"Context"})
	var amb *AmbiguousError
	if !errors.As(err, &amb) || !reflect.DeepEqual(amb.Candidates, []string{"context", "example.com/ml/pkg/context"}) {
		t.Errorf("context.Context: %v", err)
	}
	// Two modules of the second tier: ambiguous too.
	_, err = r.Resolve(ctx, "constraints", []string{"Float"})
	if !errors.As(err, &amb) || len(amb.Candidates) != 2 {
		t.Errorf("constraints.Float: %v", err)
	}
	if got, err := r.Resolve(ctx, "constraints", []string{"Integer"}); got != "golang.example/exp/constraints" || err != nil {
		t.Errorf("constraints.Integer: %q, %v", got, err)
	}
}

func TestSelectors(t *testing.T) {
	src := "x := backends.New()\ny := mybackends.Other\nz := backends . Must(backends.New())\n"
	if got := Selectors(src, "backends"); !reflect.DeepEqual(got, []string{"Must", "New"}) {
		t.Errorf("Selectors = %q", got)
	}
}
