package vfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFile replaces the file name with data atomically and durably: it
// writes name+".tmp", syncs it, renames it over name (fsys syncs the
// directory on rename, as OS does) and removes the temporary file on
// failure. A crash leaves either the old contents or the new, never a
// mix. The file gets mode PermFile; the directory is created (PermDir)
// if missing.
func WriteFile(fsys FS, name string, data []byte) error {
	return WriteFilePerm(fsys, name, data, PermFile)
}

// WriteFilePerm is WriteFile with the file's mode (before the umask), such
// as PermSecret for a private key. The mode is set when the temporary file
// is created, so the data is never readable under a wider one.
func WriteFilePerm(fsys FS, name string, data []byte, perm fs.FileMode) error {
	if err := fsys.MkdirAll(filepath.Dir(name), PermDir); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	tmp := name + ".tmp"
	// A temporary file left by a crash keeps its old mode when opened
	// again; remove it so the new one is created with perm.
	if _, err := fsys.Stat(tmp); err == nil {
		if err := fsys.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	f, err := fsys.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_EXCL, perm)
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
