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

func TestTrimSharedKeepsTheTwoLastUsedAndRecentOnes(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	mk := func(name string, age time.Duration) string {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(d, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
		return d
	}
	newest, second := mk("l1", 100*time.Hour), mk("l2", 200*time.Hour)
	gone := mk("l3", 300*time.Hour)
	// A listing file beside them is not a library.
	if err := os.WriteFile(filepath.Join(dir, "listing.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	trimShared(dir, 24*time.Hour, now)
	for _, d := range []string{newest, second, filepath.Join(dir, "listing.json")} {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("%s was removed", d)
		}
	}
	if _, err := os.Stat(gone); err == nil {
		t.Fatalf("%s, unused for 300 hours and not among the two last used, stayed", gone)
	}
	recent := mk("l4", time.Hour)
	old := mk("l5", 400*time.Hour)
	trimShared(dir, 24*time.Hour, now)
	if _, err := os.Stat(recent); err != nil {
		t.Fatal("a library used an hour ago was removed")
	}
	if _, err := os.Stat(old); err == nil {
		t.Fatal("a library unused for 400 hours stayed")
	}
}
