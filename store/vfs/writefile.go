package vfs

import (
	"fmt"
	"path/filepath"
)

// WriteFile replaces the file name with data atomically and durably: it
// writes name+".tmp", syncs it, renames it over name (fsys syncs the
// directory on rename, as OS does) and removes the temporary file on
// failure. A crash leaves either the old contents or the new, never a
// mix. The directory is created if missing.
func WriteFile(fsys FS, name string, data []byte) error {
	if err := fsys.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	tmp := name + ".tmp"
	f, err := fsys.Create(tmp)
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, name)
	}
	if err != nil {
		_ = fsys.Remove(tmp)
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}
