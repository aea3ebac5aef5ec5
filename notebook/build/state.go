package build

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// State is what another process needs to import what this Builder's cells
// import: the session module (the modules %go get, first imports, %use and
// go.work added, at their versions), the export data already built, and
// which version of each local package imports mean. A launched worker
// adopts the kernel's State before it replays the notebook's declarations,
// so that every import of the cells resolves there as it did in the kernel,
// on this machine or another.
type State struct {
	GoMod string `json:"go_mod"`
	GoSum string `json:"go_sum,omitempty"`
	// Archives are export data files by package path (see Archives).
	Archives map[string]string `json:"archives,omitempty"`
	// Local maps the import path of a local package to the path of its
	// current version (see local.go).
	Local map[string]string `json:"local,omitempty"`
	// Shared names the shared library the archives were compiled to link
	// against ("" for none): they serve only a Builder with the same one.
	Shared string `json:"shared,omitempty"`
	// Safepoints are the module cache's packages compiled with interrupt
	// checks (modsafepoints.go): the adopting Builder compiles them so too.
	Safepoints []SafepointPackage `json:"safepoints,omitempty"`
}

// State returns the Builder's state for another process.
func (b *Builder) State() State {
	snap := b.mod.snapshot()
	st := State{GoMod: string(snap.mod), GoSum: string(snap.sum), Archives: b.Archives(), Safepoints: b.safepointPackages()}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lib != nil {
		st.Shared = b.lib.id
	}
	if len(b.local.current) > 0 {
		st.Local = make(map[string]string, len(b.local.current))
		for p, m := range b.local.current {
			st.Local[p] = m
		}
	}
	return st
}

// AdoptState makes st (another Builder's State) this Builder's: its session
// module takes st's requirements and replacements, goaccel's own
// replacement pointing at this process's source; the archives whose files
// exist here are used as they are, and imports of local packages mean the
// versions st's do. A local module st uses whose directory does not exist
// here is an error naming it (a notebook's %use DIR on another machine).
func (b *Builder) AdoptState(ctx context.Context, st State) error {
	if st.GoMod == "" {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	before := b.mod.snapshot()
	if err := os.WriteFile(filepath.Join(b.mod.dir, "go.mod"), []byte(st.GoMod), 0o644); err != nil {
		return err
	}
	sum := mergeSums(string(before.sum), st.GoSum)
	if err := os.WriteFile(filepath.Join(b.mod.dir, "go.sum"), []byte(sum), 0o644); err != nil {
		b.mod.restore(before)
		return err
	}
	if err := b.mod.goCmd(ctx, io.Discard, nil, "mod", "edit", "-replace", ModulePath+"="+b.host.SourceDir); err != nil {
		b.mod.restore(before)
		return fmt.Errorf("adopting the kernel's session module: %w", err)
	}
	if err := b.adoptSafepoints(ctx, st.Safepoints); err != nil {
		b.mod.restore(before)
		return fmt.Errorf("adopting the kernel's session module: %w", err)
	}
	if missing, err := b.mod.missingReplacements(ctx); err != nil {
		b.mod.restore(before)
		return err
	} else if len(missing) > 0 {
		b.mod.restore(before)
		return fmt.Errorf("the notebook uses local modules whose directories do not exist on this machine: %s "+
			"(a module made importable with %%use DIR or a go.work is read from that directory; put it at the same path here, or publish it and %%go get it)",
			strings.Join(missing, ", "))
	}
	// Archives another Builder of the same configuration resolved, whose
	// files exist here: those packages need no go command to be imported,
	// and cells built against them get the keys they would get after
	// resolving the packages here (the paths are the go build cache's,
	// named by content).
	if err := b.ensureShared(ctx, func(string) {}); err != nil {
		b.mod.restore(before)
		return err
	}
	shared := ""
	if b.lib != nil {
		shared = b.lib.id
	}
	for p, a := range st.Archives {
		if _, known := b.archives[p]; !known && fileExists(a) && st.Shared == shared {
			b.archives[p] = a
		}
	}
	for p, m := range st.Local {
		b.local.current[p] = m
		b.local.paths[p] = true
	}
	return nil
}

// missingReplacements lists the directory replacements of the session
// module whose directories do not exist ("module => dir").
func (m *sessionModule) missingReplacements(ctx context.Context) ([]string, error) {
	var out bytes.Buffer
	if err := m.goCmd(ctx, &out, nil, "mod", "edit", "-json"); err != nil {
		return nil, fmt.Errorf("reading the session module: %w", err)
	}
	var mod struct {
		Replace []struct {
			Old struct{ Path string }
			New struct{ Path, Version string }
		}
	}
	if err := json.Unmarshal(out.Bytes(), &mod); err != nil {
		return nil, fmt.Errorf("reading the session module: %w", err)
	}
	var missing []string
	for _, r := range mod.Replace {
		if r.New.Version != "" {
			continue // a module version, not a directory
		}
		dir := r.New.Path
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(m.dir, dir)
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			missing = append(missing, r.Old.Path+" => "+r.New.Path)
		}
	}
	sort.Strings(missing)
	return missing, nil
}

// mergeSums joins two go.sum texts, each line once.
func mergeSums(a, b string) string {
	seen := map[string]bool{}
	var lines []string
	for _, l := range strings.Split(a+"\n"+b, "\n") {
		if l = strings.TrimSpace(l); l != "" && !seen[l] {
			seen[l] = true
			lines = append(lines, l)
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n") + "\n"
}
