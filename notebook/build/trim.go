package build

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// DefaultCacheLimit bounds the compiled cells kept for one toolchain
// configuration (a plugin is tens of MB: it carries the runtime and every
// package it uses). GOACCEL_BUILD_CACHE_LIMIT overrides it ("2GiB",
// "500MiB", bytes).
const DefaultCacheLimit = 4 << 30

// cacheKeep protects recently used builds from trimming: a running kernel
// may still import them into its next cell.
const cacheKeep = 24 * time.Hour

// cacheLimit is the limit GOACCEL_BUILD_CACHE_LIMIT sets, or the default.
func cacheLimit() int64 {
	v := strings.TrimSpace(os.Getenv("GOACCEL_BUILD_CACHE_LIMIT"))
	if v == "" {
		return DefaultCacheLimit
	}
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		n      int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"B", 1}} {
		if strings.HasSuffix(v, u.suffix) {
			v, mult = strings.TrimSpace(strings.TrimSuffix(v, u.suffix)), u.n
			break
		}
	}
	n, err := strconv.ParseFloat(v, 64)
	if err != nil || n < 0 {
		return DefaultCacheLimit
	}
	return int64(n * float64(mult))
}

// trimCells removes the least recently used builds under root/cells until
// they take at most limit bytes, sparing those used within keep (Build
// marks a build used when it is built, loaded from the cache or imported).
// It also removes session modules left by kernels that died, once older
// than keep. Errors only leave more behind.
func trimCells(root string, limit int64, keep time.Duration, now time.Time) {
	type entry struct {
		dir  string
		used time.Time
		size int64
	}
	var entries []entry
	var total int64
	shards, _ := os.ReadDir(filepath.Join(root, "cells"))
	for _, sh := range shards {
		dirs, _ := os.ReadDir(filepath.Join(root, "cells", sh.Name()))
		for _, d := range dirs {
			dir := filepath.Join(root, "cells", sh.Name(), d.Name())
			info, err := os.Stat(dir)
			if err != nil || !info.IsDir() {
				continue
			}
			e := entry{dir: dir, used: info.ModTime()}
			files, _ := os.ReadDir(dir)
			for _, f := range files {
				if fi, err := f.Info(); err == nil {
					e.size += fi.Size()
				}
			}
			entries = append(entries, e)
			total += e.size
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].used.Before(entries[j].used) })
	for _, e := range entries {
		if total <= limit || now.Sub(e.used) < keep {
			break
		}
		if os.RemoveAll(e.dir) == nil {
			total -= e.size
		}
	}
	sessions, _ := os.ReadDir(filepath.Join(root, "sessions"))
	for _, s := range sessions {
		if info, err := s.Info(); err == nil && now.Sub(info.ModTime()) > keep {
			_ = os.RemoveAll(filepath.Join(root, "sessions", s.Name()))
		}
	}
}

// touch marks a build directory used.
func touch(dir string) {
	now := time.Now()
	_ = os.Chtimes(dir, now, now)
}

// DefaultSharedLimit bounds the shared libraries kept for one
// configuration beyond the two used last and those in use (a library is
// 80–200 MB, and a new set of packages or an edit of goaccel makes a new
// one: a day of tests made dozens).
const DefaultSharedLimit = 2 << 30

// sharedActive spares a library a kernel used this recently from the size
// bound: kernels touch theirs at every cell they build.
const sharedActive = time.Hour

// trimShared removes the shared libraries under dir (one directory each)
// that no kernel used within keep, but the two used last: a library
// serves one version of goaccel's source and of Go, and an edit to either
// makes a new one. Beyond limit bytes it also removes the least recently
// used of those not used within active.
func trimShared(dir string, keep, active time.Duration, limit int64, now time.Time) {
	libs, _ := os.ReadDir(dir)
	type lib struct {
		name string
		used time.Time
		size int64
	}
	var all []lib
	var total int64
	for _, l := range libs {
		if info, err := l.Info(); err == nil && info.IsDir() {
			size := treeSize(filepath.Join(dir, l.Name()))
			all = append(all, lib{l.Name(), info.ModTime(), size})
			total += size
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].used.After(all[j].used) })
	for i := len(all) - 1; i >= 2; i-- {
		l := all[i]
		idle := now.Sub(l.used)
		if idle > keep || (total > limit && idle > active) {
			if removeTree(filepath.Join(dir, l.name)) == nil {
				total -= l.size
			}
		}
	}
}

// configSource names the file in a configuration's directory that holds
// the goaccel source it compiles against (Host.SourceDir), and configUsed
// the file every Builder of it touches.
const (
	configSource = "source"
	configUsed   = "used"
)

// sourceGoneGrace spares a configuration whose source directory is gone
// (a removed checkout or worktree) this long after its last use.
const sourceGoneGrace = time.Hour

// markConfig records root's source directory and marks it used.
func markConfig(root, source string) {
	if source != "" {
		if cur, err := os.ReadFile(filepath.Join(root, configSource)); err != nil || string(cur) != source {
			_ = os.WriteFile(filepath.Join(root, configSource), []byte(source), 0o644)
		}
	}
	used := filepath.Join(root, configUsed)
	if f, err := os.OpenFile(used, os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		f.Close()
	}
	touch(used)
}

// trimConfigs removes the directories of other configurations under
// cache (one per toolchain, platform and goaccel source directory) that no
// Builder used within keep, or whose source directory is gone and that no
// Builder used within sourceGoneGrace: each holds gigabytes of cells and
// libraries no kernel of this machine will load again.
func trimConfigs(cache, current string, keep time.Duration, now time.Time) {
	dirs, _ := os.ReadDir(cache)
	for _, d := range dirs {
		root := filepath.Join(cache, d.Name())
		if !d.IsDir() || root == current || !isConfigDir(root) {
			continue
		}
		idle := now.Sub(lastUse(root))
		src, err := os.ReadFile(filepath.Join(root, configSource))
		gone := err == nil && len(src) > 0 && !pathExists(string(src))
		if idle > keep || (gone && idle > sourceGoneGrace) {
			_ = removeTree(root)
		}
	}
}

// isConfigDir reports whether dir is a configuration's directory: named as
// New names them and holding what a Builder makes.
func isConfigDir(dir string) bool {
	name := filepath.Base(dir)
	if len(name) != 16 || strings.Trim(name, "0123456789abcdef") != "" {
		return false
	}
	for _, sub := range []string{"sessions", "cells", "shared"} {
		if pathExists(filepath.Join(dir, sub)) {
			return true
		}
	}
	return false
}

// lastUse is when a Builder last used the configuration at root: the
// newest of its marks (configurations made before the used file existed
// have only their directories' times).
func lastUse(root string) time.Time {
	var last time.Time
	for _, p := range []string{root, filepath.Join(root, configUsed), filepath.Join(root, "sessions"),
		filepath.Join(root, "cells"), filepath.Join(root, "shared"), filepath.Join(root, "safepoints")} {
		if info, err := os.Stat(p); err == nil && info.ModTime().After(last) {
			last = info.ModTime()
		}
	}
	if libs, err := os.ReadDir(filepath.Join(root, "shared")); err == nil {
		for _, l := range libs {
			if info, err := l.Info(); err == nil && info.ModTime().After(last) {
				last = info.ModTime()
			}
		}
	}
	return last
}

func pathExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// treeSize is the size of the files under dir.
func treeSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// removeTree removes dir, making read-only directories in it writable
// first where that is what stopped it.
func removeTree(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
