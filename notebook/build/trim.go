package build

import (
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

// trimShared removes the shared libraries under dir (one directory each)
// that no kernel used within keep, but the two used last: a library
// serves one version of goaccel's source and of Go, and an edit to either
// makes a new one.
func trimShared(dir string, keep time.Duration, now time.Time) {
	libs, _ := os.ReadDir(dir)
	type lib struct {
		name string
		used time.Time
	}
	var all []lib
	for _, l := range libs {
		if info, err := l.Info(); err == nil && info.IsDir() {
			all = append(all, lib{l.Name(), info.ModTime()})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].used.After(all[j].used) })
	for i, l := range all {
		if i >= 2 && now.Sub(l.used) > keep {
			_ = os.RemoveAll(filepath.Join(dir, l.name))
		}
	}
}
