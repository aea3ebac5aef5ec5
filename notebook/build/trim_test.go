package build

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestTrimCellsRemovesLeastRecentlyUsedBeyondTheLimit(t *testing.T) {
	root := t.TempDir()
	now := time.Now()
	mk := func(name string, size int, age time.Duration) string {
		dir := filepath.Join(root, "cells", name[:2], name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "plugin.so"), make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(dir, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	oldest := mk("aa01", 100, 72*time.Hour)
	old := mk("ab02", 100, 48*time.Hour)
	recent := mk("ac03", 100, time.Hour) // used within keep: stays though over the limit
	fresh := mk("ad04", 100, 0)
	deadSession := filepath.Join(root, "sessions", "s1")
	liveSession := filepath.Join(root, "sessions", "s2")
	for _, d := range []string{deadSession, liveSession} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(deadSession, now.Add(-48*time.Hour), now.Add(-48*time.Hour)); err != nil {
		t.Fatal(err)
	}

	trimCells(root, 150, 24*time.Hour, now)

	for dir, want := range map[string]bool{oldest: false, old: false, recent: true, fresh: true, deadSession: false, liveSession: true} {
		if _, err := os.Stat(dir); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", dir, err == nil, want)
		}
	}
}

func TestCacheLimitFromTheEnvironment(t *testing.T) {
	for v, want := range map[string]int64{"": DefaultCacheLimit, "2GiB": 2 << 30, "500 MiB": 500 << 20, "1000": 1000, "nonsense": DefaultCacheLimit} {
		t.Setenv("GOACCEL_BUILD_CACHE_LIMIT", v)
		if got := cacheLimit(); got != want {
			t.Errorf("%q: %d, want %d", v, got, want)
		}
	}
}
