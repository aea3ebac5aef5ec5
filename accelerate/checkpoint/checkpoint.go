// Package checkpoint is the file-system side of Accelerator.SaveState and
// LoadState: checkpoint directories that become visible only when complete,
// a manifest that describes what a checkpoint holds (so that loading it into
// another world size or model shape is a clear error), Accelerate's
// automatic naming (checkpoints/checkpoint_K) and its total limit.
//
// A checkpoint is written into a hidden staging directory beside its final
// name (".checkpoint_3.partial"); every file is fsynced as it is written;
// the manifest, listing every file with its size and CRC-32C, is written
// last; then the staging directory is renamed to the final name (atomically
// exchanged with an older checkpoint of the same name) and the parent
// directory is fsynced. A crash at any point leaves either no checkpoint
// under the final name or a complete one: the staging directory is ignored
// by Newest and removed by the next save to the same name. This package
// does no communication; the Accelerator makes every process agree before
// the rename.
package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ManifestName is the file that marks a directory as a complete checkpoint.
const ManifestName = "goaccel_checkpoint.json"

// FormatVersion is the manifest format this package writes.
const FormatVersion = 1

// DirPrefix is the prefix of automatically named checkpoints
// (Accelerate's checkpoint_{iteration}).
const DirPrefix = "checkpoint_"

// ErrNoCheckpoint is returned by Newest when no complete checkpoint exists.
var ErrNoCheckpoint = errors.New("no checkpoint")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// FileInfo is what the manifest records about one file.
type FileInfo struct {
	Size   int64  `json:"size"`
	CRC32C uint32 `json:"crc32c"`
	Rank   int    `json:"rank"` // the process that wrote it
}

// Model describes one prepared model's tensors.
type Model struct {
	DType  string   `json:"dtype"` // "F64" or "F32"
	Names  []string `json:"names"`
	Shapes [][]int  `json:"shapes"`
	Shards int      `json:"shards,omitempty"` // > 0: every process wrote its share (shards.go)
}

// Manifest describes a complete checkpoint.
type Manifest struct {
	Format     int      `json:"format"`
	WorldSize  int      `json:"world_size"`
	Iteration  int      `json:"iteration"` // the save iteration (automatic naming)
	Step       int      `json:"step"`      // Accelerator.Step when saved
	Models     []Model  `json:"models"`
	Optimizers []string `json:"optimizers"` // Go types
	// OptimizerShards[i] > 0: every process wrote its share of optimizer
	// i's state (shards.go).
	OptimizerShards []int               `json:"optimizer_shards,omitempty"`
	Custom          []string            `json:"custom"` // Go types of the registered objects
	Scaler          bool                `json:"scaler"`
	Files           map[string]FileInfo `json:"files"`
}

// StagingDir is the hidden directory a checkpoint to be named final is
// written into.
func StagingDir(final string) string {
	dir, base := filepath.Split(filepath.Clean(final))
	return filepath.Join(dir, "."+base+".partial")
}

// Begin removes what an interrupted save to final left behind and creates
// an empty staging directory (and final's parent). The main process calls
// it before any process writes.
func Begin(final string) (string, error) {
	st := StagingDir(final)
	if err := os.RemoveAll(st); err != nil {
		return "", fmt.Errorf("checkpoint: removing the leftovers of an interrupted save: %w", err)
	}
	if err := os.MkdirAll(st, 0o755); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	return st, nil
}

// WriteFile writes data to dir/name, fsyncs it and returns its FileInfo.
func WriteFile(dir, name string, rank int, data []byte) (FileInfo, error) {
	return WriteFunc(dir, name, rank, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

type crcWriter struct {
	w   io.Writer
	crc uint32
	n   int64
}

func (c *crcWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.crc = crc32.Update(c.crc, castagnoli, p[:n])
	c.n += int64(n)
	return n, err
}

// WriteFunc creates dir/name, lets write fill it, fsyncs it and returns its
// FileInfo.
func WriteFunc(dir, name string, rank int, write func(io.Writer) error) (FileInfo, error) {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return FileInfo{}, fmt.Errorf("checkpoint: %w", err)
	}
	cw := &crcWriter{w: f}
	err = write(cw)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return FileInfo{}, fmt.Errorf("checkpoint: writing %s: %w", name, err)
	}
	return FileInfo{Size: cw.n, CRC32C: cw.crc, Rank: rank}, nil
}

// Commit writes the manifest into staging, fsyncs it, and makes staging
// visible as final: renamed, or atomically exchanged with an existing final
// directory (which is then removed). The parent directory is fsynced.
func Commit(staging, final string, m *Manifest) error {
	m.Format = FormatVersion
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("checkpoint: manifest: %w", err)
	}
	if _, err := WriteFile(staging, ManifestName, 0, append(b, '\n')); err != nil {
		return err
	}
	if err := syncDir(staging); err != nil {
		return err
	}
	parent := filepath.Dir(filepath.Clean(final))
	if _, err := os.Lstat(final); err == nil {
		// Replace an older checkpoint of the same name in one step where
		// the kernel can (renameat2 RENAME_EXCHANGE), else in two renames
		// (a crash between them leaves no checkpoint under that name, never
		// a partial one).
		if err := unix.Renameat2(unix.AT_FDCWD, staging, unix.AT_FDCWD, final, unix.RENAME_EXCHANGE); err != nil {
			old := staging + ".old"
			os.RemoveAll(old)
			if err := os.Rename(final, old); err != nil {
				return fmt.Errorf("checkpoint: moving the previous %s aside: %w", final, err)
			}
			if err := os.Rename(staging, final); err != nil {
				return fmt.Errorf("checkpoint: %w", err)
			}
			staging = old
		}
		if err := syncDir(parent); err != nil {
			return err
		}
		if err := os.RemoveAll(staging); err != nil {
			return fmt.Errorf("checkpoint: removing the replaced checkpoint: %w", err)
		}
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := os.Rename(staging, final); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return syncDir(parent)
}

// Abort removes a staging directory after a failed save.
func Abort(staging string) { os.RemoveAll(staging) }

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("checkpoint: syncing %s: %w", dir, err)
	}
	return nil
}

// ReadManifest reads dir's manifest. A directory without one is not a
// complete checkpoint: the error says so.
func ReadManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat(dir); serr != nil {
			return nil, fmt.Errorf("checkpoint: %w", serr)
		}
		return nil, fmt.Errorf("checkpoint: %s is not a complete checkpoint: it has no %s", dir, ManifestName)
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("checkpoint: %s/%s: %w", dir, ManifestName, err)
	}
	if m.Format != FormatVersion {
		return nil, fmt.Errorf("checkpoint: %s has manifest format %d; this goaccel reads format %d", dir, m.Format, FormatVersion)
	}
	return &m, nil
}

// ReadFile reads dir/name and checks it against the manifest's size and
// CRC-32C.
func (m *Manifest) ReadFile(dir, name string) ([]byte, error) {
	info, ok := m.Files[name]
	if !ok {
		return nil, fmt.Errorf("checkpoint: %s lists no file %s", ManifestName, name)
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	if int64(len(b)) != info.Size {
		return nil, fmt.Errorf("checkpoint: %s/%s has %d bytes, the manifest says %d", dir, name, len(b), info.Size)
	}
	if c := crc32.Checksum(b, castagnoli); c != info.CRC32C {
		return nil, fmt.Errorf("checkpoint: %s/%s is corrupt (CRC-32C %08x, the manifest says %08x)", dir, name, c, info.CRC32C)
	}
	return b, nil
}

// Numbered is one automatically named checkpoint.
type Numbered struct {
	Path      string
	Iteration int
}

// List returns the complete checkpoint_K directories under root (those with
// a manifest), oldest first. A missing root is an empty list.
func List(root string) ([]Numbered, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	var out []Numbered
	for _, e := range entries {
		k, ok := iterationOf(e.Name())
		if !ok || !e.IsDir() {
			continue
		}
		p := filepath.Join(root, e.Name())
		if _, err := os.Stat(filepath.Join(p, ManifestName)); err != nil {
			continue
		}
		out = append(out, Numbered{Path: p, Iteration: k})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Iteration < out[j].Iteration })
	return out, nil
}

func iterationOf(name string) (int, bool) {
	s, ok := strings.CutPrefix(name, DirPrefix)
	if !ok {
		return 0, false
	}
	k, err := strconv.Atoi(s)
	return k, err == nil && k >= 0
}

// IterationOf is K for a directory named checkpoint_K.
func IterationOf(dir string) (int, bool) { return iterationOf(filepath.Base(filepath.Clean(dir))) }

// Newest returns the complete checkpoint under root with the highest K, or
// an error wrapping ErrNoCheckpoint.
func Newest(root string) (Numbered, error) {
	l, err := List(root)
	if err != nil {
		return Numbered{}, err
	}
	if len(l) == 0 {
		return Numbered{}, fmt.Errorf("checkpoint: %w under %s", ErrNoCheckpoint, root)
	}
	return l[len(l)-1], nil
}

// Rotate removes the oldest checkpoints under root until at most limit
// remain (Accelerate's total_limit); limit <= 0 keeps all. It returns the
// paths removed.
func Rotate(root string, limit int) ([]string, error) {
	if limit <= 0 {
		return nil, nil
	}
	l, err := List(root)
	if err != nil {
		return nil, err
	}
	var removed []string
	for len(l) > limit {
		// Hidden first, so that a crash halfway through the removal never
		// leaves a directory that still looks like a checkpoint.
		dir, base := filepath.Split(l[0].Path)
		gone := filepath.Join(dir, "."+base+".removing")
		if err := os.Rename(l[0].Path, gone); err != nil {
			return removed, fmt.Errorf("checkpoint: removing %s beyond the total limit of %d: %w", l[0].Path, limit, err)
		}
		if err := os.RemoveAll(gone); err != nil {
			return removed, fmt.Errorf("checkpoint: removing %s beyond the total limit of %d: %w", l[0].Path, limit, err)
		}
		removed = append(removed, l[0].Path)
		l = l[1:]
	}
	return removed, nil
}
