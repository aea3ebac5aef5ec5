package gorun

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// CopyDir copies the files and directories under src into dst (which must
// exist), keeping permission bits.
func CopyDir(dst, src string) error {
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		case info.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, data, info.Mode().Perm())
		default:
			return nil // links and devices are not copied
		}
	})
	if err != nil {
		return fmt.Errorf("gorun: copying %s: %w", src, err)
	}
	return nil
}
