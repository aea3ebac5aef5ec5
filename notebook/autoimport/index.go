package autoimport

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"go/build"
	"os"
	"path/filepath"
	"strings"
)

// modIndex is the importable packages of a module (or of the standard
// library), by package name.
type modIndex struct {
	Names map[string][]pkgRef
}

// pkgRef is one package: its import path and its directory relative to
// the module's.
type pkgRef struct {
	Path string
	Rel  string
}

// indexVersion changes when modIndex's meaning does (old caches are
// ignored).
const indexVersion = "1"

// index returns m's index: from memory, the disk cache, or a walk of its
// directory.
func (r *Resolver) index(m Module) *modIndex {
	key := m.Path + "@" + m.Version
	if m.Version == "" {
		key = m.Path + "@" + m.Dir // a local module: keyed by its directory, never cached on disk
	}
	r.mu.Lock()
	if idx, ok := r.mods[key]; ok {
		r.mu.Unlock()
		return idx
	}
	r.mu.Unlock()
	var idx *modIndex
	cache := ""
	if r.CacheDir != "" && m.Version != "" && !writable(m.Dir) {
		sum := sha256.Sum256([]byte(indexVersion + "\x00" + key + "\x00" + m.Dir))
		cache = filepath.Join(r.CacheDir, hex.EncodeToString(sum[:12])+".json")
		if b, err := os.ReadFile(cache); err == nil {
			var c modIndex
			if json.Unmarshal(b, &c) == nil && c.Names != nil {
				idx = &c
			}
		}
	}
	if idx == nil {
		idx = walk(m.Dir, m.Path, nil)
		if cache != "" {
			if b, err := json.Marshal(idx); err == nil {
				_ = os.MkdirAll(r.CacheDir, 0o755)
				tmp := cache + ".tmp"
				if os.WriteFile(tmp, b, 0o644) == nil {
					_ = os.Rename(tmp, cache)
				}
			}
		}
	}
	r.mu.Lock()
	if r.mods == nil {
		r.mods = map[string]*modIndex{}
	}
	r.mods[key] = idx
	r.mu.Unlock()
	return idx
}

// writable reports whether dir can be written: the module cache's
// directories cannot (so their content never changes), local modules'
// can.
func writable(dir string) bool {
	fi, err := os.Stat(dir)
	return err == nil && fi.Mode().Perm()&0o222 != 0
}

// walk indexes the packages under root, whose import path is prefix
// (empty for the standard library). Directories named testdata, vendor,
// internal (not importable from the session) or starting with . or _,
// nested modules and skip(rel) are left out, as are commands.
func walk(root, prefix string, skip func(rel string) bool) *modIndex {
	idx := &modIndex{Names: map[string][]pkgRef{}}
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			rel = ""
		}
		base := d.Name()
		if rel != "" {
			if base == "testdata" || base == "vendor" || base == "internal" || strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_") {
				return filepath.SkipDir
			}
			if skip != nil && skip(rel) {
				return filepath.SkipDir
			}
			if exists(filepath.Join(p, "go.mod")) {
				return filepath.SkipDir // another module
			}
		}
		bp, err := build.Default.ImportDir(p, build.ImportComment)
		if err != nil || bp.Name == "" || bp.Name == "main" || strings.HasSuffix(bp.Name, "_test") {
			return nil
		}
		path := prefix
		if rel != "" {
			if path != "" {
				path += "/"
			}
			path += rel
		}
		if path == "" {
			return nil
		}
		idx.Names[bp.Name] = append(idx.Names[bp.Name], pkgRef{Path: path, Rel: rel})
		return nil
	})
	return idx
}
