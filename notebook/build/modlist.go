package build

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
)

// listedModule is a module as the go command lists it: a package's module
// in `go list -json` output, or one module of `go list -m -json`.
type listedModule struct {
	Path, Version, Dir, GoVersion string
	Main                          bool // the session module itself
	Replace                       *struct{ Path, Version, Dir string }
	Error                         *struct{ Err string } // with -e: what could not be looked up
}

// version is the module's version as the build list selects it: a
// replaced module's is its replacement, path@version, or the directory
// alone for a local replacement.
func (m *listedModule) version() string {
	if m.Replace == nil || isSafepointLink(m.Replace.Path) {
		return m.Version // a link to the module cache's copy (modsafepoints.go) is that version
	}
	if m.Replace.Version == "" {
		return m.Replace.Path
	}
	return m.Replace.Path + "@" + m.Replace.Version
}

// listModules lists the session's build list (`go list -m -e -json all`).
// With -e a module whose details the go command cannot look up (offline,
// its .info not in the module cache: the test-only requirements of a
// dependency, say) is still listed, with the version the module graph
// selects and its Error set.
func (m *sessionModule) listModules(ctx context.Context, progress func(string)) ([]listedModule, error) {
	var out bytes.Buffer
	if err := m.goCmd(ctx, &out, progress, "list", "-m", "-e", "-json", "all"); err != nil {
		return nil, err
	}
	var list []listedModule
	for dec := json.NewDecoder(&out); ; {
		var mod listedModule
		if err := dec.Decode(&mod); err == io.EOF {
			return list, nil
		} else if err != nil {
			return nil, fmt.Errorf("reading go list -m output: %w", err)
		}
		list = append(list, mod)
	}
}

// versionsOf maps a build list to module path → version (see version).
func versionsOf(list []listedModule) map[string]string {
	vers := make(map[string]string, len(list))
	for i := range list {
		vers[list[i].Path] = list[i].version()
	}
	return vers
}

// moduleVersions lists the build list as module path → version.
func (m *sessionModule) moduleVersions(ctx context.Context) (map[string]string, error) {
	list, err := m.listModules(ctx, nil)
	if err != nil {
		return nil, err
	}
	return versionsOf(list), nil
}
