package export

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/goaccel/goaccel/notebook/build"
)

// ReadNotebook returns the code cells of the .ipynb file at path, in
// order; those tagged raises-exception (they fail on purpose) are to be
// left out.
func ReadNotebook(path string) ([]Cell, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var nb struct {
		Cells []struct {
			Type     string          `json:"cell_type"`
			Source   json.RawMessage `json:"source"`
			Metadata struct {
				Tags []string `json:"tags"`
			} `json:"metadata"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(data, &nb); err != nil {
		return nil, fmt.Errorf("%s is not a notebook (.ipynb JSON): %w", path, err)
	}
	var cells []Cell
	for i, c := range nb.Cells {
		if c.Type != "code" {
			continue
		}
		var s string
		if err := json.Unmarshal(c.Source, &s); err != nil {
			var lines []string
			if err := json.Unmarshal(c.Source, &lines); err != nil {
				return nil, fmt.Errorf("%s: cell %d: source is neither a string nor a list of lines", path, i+1)
			}
			s = strings.Join(lines, "")
		}
		cell := Cell{Source: s}
		for _, t := range c.Metadata.Tags {
			if t == "raises-exception" {
				cell.LeaveOut = "tagged raises-exception: it fails on purpose"
			}
		}
		cells = append(cells, cell)
	}
	return cells, nil
}

// ModuleOptions configure WriteModule.
type ModuleOptions struct {
	// Module is the module path of the program ("notebook" by default).
	Module string
	// AutoImport: see Options.
	AutoImport func(name string) string
	// Progress hears what takes time (resolving and fetching modules).
	Progress func(string)
	// Build is the configuration of the kernel the program is checked for
	// (the defaults: this binary's).
	Build build.Options
}

// WriteModule exports the code cells as a Go module in dir (created
// if needed): main.go, and the go.mod and go.sum of a kernel session that
// ran the notebook (goaccel and the modules it links, at the versions the
// kernel has, with what %go get and %use added).
func WriteModule(ctx context.Context, cells []Cell, dir string, opts ModuleOptions) (*Result, error) {
	b, err := build.New(ctx, opts.Build)
	if err != nil {
		return nil, fmt.Errorf("the Go toolchain cannot check the notebook here: %w", err)
	}
	defer b.Close()
	progress := opts.Progress
	if progress == nil {
		progress = func(string) {}
	}
	done := b.Attend(ctx, progress)
	defer done()
	fset := token.NewFileSet()
	// The kernel's resolution of names used without an import.
	res := b.Resolver(opts.AutoImport)
	result, err := Export(ctx, cells, Options{
		Importer: b.Importer(fset), FileSet: fset, AutoImport: opts.AutoImport,
		Resolve: func(name, src string) (string, error) { return res.ResolveIn(ctx, name, src) },
		Module: func(ctx context.Context, cmd string) (bool, error) {
			f := strings.Fields(cmd)
			switch {
			case len(f) >= 3 && f[0] == "go" && f[1] == "get":
				return true, b.Get(ctx, progress, f[2:]...)
			case len(f) >= 2 && f[0] == "goget":
				return true, b.Get(ctx, progress, f[1:]...)
			case len(f) == 2 && f[0] == "use":
				_, err := b.Use(ctx, f[1], progress)
				return true, err
			}
			return false, nil
		},
	})
	if err != nil {
		return nil, err
	}
	mod, err := b.ProgramGoMod()
	if err != nil {
		return nil, err
	}
	name := opts.Module
	if name == "" {
		name = "notebook"
	}
	mod = moduleLine.ReplaceAllString(mod, "module "+name)
	sum, err := os.ReadFile(filepath.Join(b.Dir(), "go.sum"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for file, data := range map[string][]byte{"main.go": result.Main, "go.mod": []byte(mod), "go.sum": sum} {
		if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
			return nil, err
		}
	}
	return result, nil
}

var moduleLine = regexp.MustCompile(`(?m)^module\s+\S+`)
