package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func save(t *testing.T, final string, files map[string]string) {
	t.Helper()
	st, err := Begin(final)
	if err != nil {
		t.Fatal(err)
	}
	m := &Manifest{WorldSize: 1, Files: map[string]FileInfo{}}
	for name, data := range files {
		fi, err := WriteFile(st, name, 0, []byte(data))
		if err != nil {
			t.Fatal(err)
		}
		m.Files[name] = fi
	}
	if err := Commit(st, final, m); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(st); !os.IsNotExist(err) {
		t.Errorf("staging directory left behind: %v", err)
	}
}

func TestCommitAndRead(t *testing.T) {
	root := t.TempDir()
	final := filepath.Join(root, "checkpoint_0")
	save(t, final, map[string]string{"a.bin": "hello", "b.json": "{}"})
	m, err := ReadManifest(final)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := m.ReadFile(final, "a.bin"); err != nil || string(b) != "hello" {
		t.Errorf("a.bin = %q, %v", b, err)
	}
	// Replacing a checkpoint of the same name swaps it whole.
	save(t, final, map[string]string{"c.bin": "new"})
	m, err = ReadManifest(final)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(final, "a.bin")); !os.IsNotExist(err) {
		t.Errorf("the replaced checkpoint's file is still there")
	}
	if b, err := m.ReadFile(final, "c.bin"); err != nil || string(b) != "new" {
		t.Errorf("c.bin = %q, %v", b, err)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 {
		t.Errorf("root holds %d entries, want only checkpoint_0", len(entries))
	}

	// Corruption and truncation are caught.
	os.WriteFile(filepath.Join(final, "c.bin"), []byte("nex"), 0o644)
	if _, err := m.ReadFile(final, "c.bin"); err == nil || !strings.Contains(err.Error(), "is corrupt") {
		t.Errorf("corrupt file: %v", err)
	}
	os.WriteFile(filepath.Join(final, "c.bin"), []byte("ne"), 0o644)
	if _, err := m.ReadFile(final, "c.bin"); err == nil || !strings.Contains(err.Error(), "has 2 bytes, the manifest says 3") {
		t.Errorf("truncated file: %v", err)
	}
	if _, err := m.ReadFile(final, "zzz"); err == nil || !strings.Contains(err.Error(), "lists no file zzz") {
		t.Errorf("unlisted file: %v", err)
	}
}

// An interrupted save (files written, no manifest, no rename) is invisible,
// and a directory without a manifest is refused by name.
func TestInterruptedSaveIsInvisible(t *testing.T) {
	root := t.TempDir()
	save(t, filepath.Join(root, "checkpoint_0"), map[string]string{"x": "1"})
	st, err := Begin(filepath.Join(root, "checkpoint_1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := WriteFile(st, "model.safetensors", 0, []byte("half")); err != nil {
		t.Fatal(err)
	}
	// ... the process dies here.
	n, err := Newest(root)
	if err != nil || n.Iteration != 0 {
		t.Fatalf("Newest = %+v, %v; want checkpoint_0", n, err)
	}
	if _, err := ReadManifest(st); err == nil || !strings.Contains(err.Error(), "is not a complete checkpoint: it has no goaccel_checkpoint.json") {
		t.Errorf("staging dir: %v", err)
	}
	// A manually made checkpoint_2 without a manifest is not a checkpoint.
	os.MkdirAll(filepath.Join(root, "checkpoint_2"), 0o755)
	if n, _ := Newest(root); n.Iteration != 0 {
		t.Errorf("Newest = %+v", n)
	}
	// The next save to checkpoint_1 starts from a clean staging directory.
	save(t, filepath.Join(root, "checkpoint_1"), map[string]string{"y": "2"})
	m, err := ReadManifest(filepath.Join(root, "checkpoint_1"))
	if err != nil || len(m.Files) != 1 {
		t.Fatalf("manifest %+v, %v", m, err)
	}
	if _, err := os.Stat(filepath.Join(root, "checkpoint_1", "model.safetensors")); !os.IsNotExist(err) {
		t.Errorf("a file of the interrupted save survived")
	}
	if _, err := Newest(t.TempDir()); !errors.Is(err, ErrNoCheckpoint) {
		t.Errorf("empty root: %v", err)
	}
}

func TestListOrderAndRotate(t *testing.T) {
	root := t.TempDir()
	for _, k := range []string{"2", "10", "1", "0"} {
		save(t, filepath.Join(root, DirPrefix+k), map[string]string{"f": k})
	}
	l, err := List(root)
	if err != nil {
		t.Fatal(err)
	}
	var ks []int
	for _, n := range l {
		ks = append(ks, n.Iteration)
	}
	if len(ks) != 4 || ks[0] != 0 || ks[3] != 10 {
		t.Errorf("order %v, want numeric", ks)
	}
	removed, err := Rotate(root, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 2 || filepath.Base(removed[0]) != "checkpoint_0" || filepath.Base(removed[1]) != "checkpoint_1" {
		t.Errorf("removed %v", removed)
	}
	entries, _ := os.ReadDir(root)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "checkpoint_10,checkpoint_2" {
		t.Errorf("left %v", names)
	}
	if k, ok := IterationOf(filepath.Join(root, "checkpoint_10") + "/"); !ok || k != 10 {
		t.Errorf("IterationOf = %d, %v", k, ok)
	}
}
