package build

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// Listing the shared library's packages asks the go command about some 450
// packages: about a second, at every kernel's first cell, to learn what is
// almost always what the last kernel learned. The listing is kept beside
// the libraries with a stamp of everything that could change it short of
// the Go toolchain and the host configuration (which name the directory):
// the library's roots (sharedRoots), GOFLAGS, goaccel's go.mod and go.sum,
// and the files of every package outside the standard library (their
// names, sizes and times). A kernel whose stamp matches, and whose export
// files all exist, uses it.

// sharedListing is the kept listing.
type sharedListing struct {
	Stamp    string    `json:"stamp"`
	Packages []*listed `json:"packages"`
	// Checks names how the packages were compiled for interrupt checks
	// (modsafepoints.go's checksFor): a kernel that would compile them
	// otherwise lists them again.
	Checks string `json:"checks,omitempty"`
}

func (b *Builder) listingFile() string { return filepath.Join(b.sharedDir, "listing.json") }

// stamp describes what the listing of pkgs depends on.
func (b *Builder) stamp(pkgs []*listed) string {
	h := sha256.New()
	b.modSP.mu.Lock()
	modcache := b.modSP.modcache // its packages' directories, and their links'
	b.modSP.mu.Unlock()
	fmt.Fprintf(h, "%s\x00%s\x00%q\x00%s\x00%s\x00", b.tc.Version, os.Getenv("GOFLAGS"), sharedRoots, safepointsVersion, modcache)
	for _, f := range []string{"go.mod", "go.sum"} {
		data, _ := os.ReadFile(filepath.Join(b.host.SourceDir, f))
		fmt.Fprintf(h, "%s %d\x00", f, len(data))
		h.Write(data)
	}
	dirs := map[string]bool{}
	for _, p := range pkgs {
		if !p.Standard && p.Dir != "" {
			dirs[p.Dir] = true
		}
	}
	sorted := make([]string, 0, len(dirs))
	for d := range dirs {
		sorted = append(sorted, d)
	}
	sort.Strings(sorted)
	for _, d := range sorted {
		entries, err := os.ReadDir(d)
		fmt.Fprintf(h, "dir %s %v\x00", d, err == nil)
		for _, e := range entries {
			if info, err := e.Info(); err == nil && !e.IsDir() {
				fmt.Fprintf(h, "%s %d %d\x00", e.Name(), info.Size(), info.ModTime().UnixNano())
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// keptListing returns the kept listing when it still holds.
func (b *Builder) keptListing() ([]*listed, string) {
	data, err := os.ReadFile(b.listingFile())
	if err != nil {
		return nil, ""
	}
	var l sharedListing
	if json.Unmarshal(data, &l) != nil || len(l.Packages) == 0 {
		return nil, ""
	}
	for _, p := range l.Packages {
		if p.Export != "" && !fileExists(p.Export) {
			return nil, "" // Go's build cache was trimmed
		}
	}
	if b.stamp(l.Packages) != l.Stamp {
		return nil, ""
	}
	return l.Packages, l.Checks
}

// keepListing writes the listing for the next kernel. Failing to only
// costs that kernel a go list.
func (b *Builder) keepListing(pkgs []*listed) {
	data, err := json.Marshal(sharedListing{Stamp: b.stamp(pkgs), Packages: pkgs, Checks: b.modSP.checksFor(pkgs)})
	if err != nil {
		return
	}
	if err := os.MkdirAll(b.sharedDir, 0o755); err != nil {
		return
	}
	_ = writeReplacing(b.listingFile(), data, 0o644)
}

// writeReplacing writes data to path through a temporary file beside it,
// renamed into place: a process reading path sees the old file or the new
// one, never a part.
func writeReplacing(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+"-*.tmp")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	if cerr := tmp.Close(); werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %v %v", path, werr, cerr)
	}
	if err := os.Chmod(tmp.Name(), perm); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
