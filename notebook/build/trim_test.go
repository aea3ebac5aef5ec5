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
	trimShared(dir, 24*time.Hour, time.Hour, 1<<40, now)
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
	trimShared(dir, 24*time.Hour, time.Hour, 1<<40, now)
	if _, err := os.Stat(recent); err != nil {
		t.Fatal("a library used an hour ago was removed")
	}
	if _, err := os.Stat(old); err == nil {
		t.Fatal("a library unused for 400 hours stayed")
	}
}

func TestTrimSharedBoundsTheirSize(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	mk := func(name string, size int, age time.Duration) string {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "lib.so"), make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(d, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
		return d
	}
	first, second := mk("l1", 100, 3*time.Hour), mk("l2", 100, 4*time.Hour)
	older := mk("l3", 100, 5*time.Hour)
	oldest := mk("l4", 100, 6*time.Hour)
	newest, next := mk("l5", 100, 30*time.Minute), mk("l6", 100, 40*time.Minute)
	// Beyond the two used last, a library used in the last hour stays
	// whatever the size: a kernel may load it into its next cell.
	active := mk("l7", 100, 50*time.Minute)
	trimShared(dir, 24*time.Hour, time.Hour, 250, now)
	// 700 bytes against 250: the others go, least recently used first.
	for d, want := range map[string]bool{newest: true, next: true, active: true, first: false, second: false, older: false, oldest: false} {
		if _, err := os.Stat(d); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", filepath.Base(d), err == nil, want)
		}
	}
}

func TestTrimConfigsRemovesUnusedAndOrphanedConfigurations(t *testing.T) {
	cache := t.TempDir()
	now := time.Now()
	src := t.TempDir()
	mk := func(name, source string, age time.Duration) string {
		root := filepath.Join(cache, name)
		for _, sub := range []string{"sessions", "cells", "shared"} {
			if err := os.MkdirAll(filepath.Join(root, sub), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		markConfig(root, source)
		// A read-only directory inside (as a module cache's) does not stop
		// the removal.
		ro := filepath.Join(root, "cells", "ab", "ro")
		if err := os.MkdirAll(ro, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ro, "f"), []byte("x"), 0o444); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{root, filepath.Join(root, configUsed), filepath.Join(root, "sessions"), filepath.Join(root, "cells"), filepath.Join(root, "shared")} {
			if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
				t.Fatal(err)
			}
		}
		return root
	}
	current := mk("00000000000000aa", src, 100*time.Hour)
	idle := mk("00000000000000bb", src, 30*time.Hour)
	used := mk("00000000000000cc", src, 2*time.Hour)
	orphan := mk("00000000000000dd", filepath.Join(src, "removed-worktree"), 2*time.Hour)
	orphanInUse := mk("00000000000000ee", filepath.Join(src, "removed-worktree"), 10*time.Minute)
	other := filepath.Join(cache, "not-a-config")
	if err := os.MkdirAll(filepath.Join(other, "cells"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(other, now.Add(-100*time.Hour), now.Add(-100*time.Hour)); err != nil {
		t.Fatal(err)
	}

	trimConfigs(cache, current, 24*time.Hour, now)

	for d, want := range map[string]bool{current: true, idle: false, used: true, orphan: false, orphanInUse: true, other: true} {
		if _, err := os.Stat(d); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", filepath.Base(d), err == nil, want)
		}
	}
}
