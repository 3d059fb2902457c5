// Package vfs is the file-system seam of leafbox's storage engines: the FS
// and File interfaces that store/filestore does all its I/O through, the OS
// implementation used in production, an in-memory implementation that can
// simulate a power cut (NewStrictMem, ResetToSyncedState, PowerCut), and an error
// injector (Inject) for full disks and failing devices.
//
// # Durability contract
//
// Every FS promises the same thing, and the engines rely on nothing more:
//
//   - File contents (bytes and length) are durable once File.Sync returns
//     nil. Writes and truncations not followed by a successful Sync may be
//     lost in a crash, each independently of the others: a disk writes
//     cached pages back in any order, so a later write may survive an
//     earlier one, in the same file or another.
//   - Namespace changes (Create, OpenFile with os.O_CREATE of a new file,
//     Rename, Remove, RemoveAll, MkdirAll) are durable when they return
//     nil: the OS implementation fsyncs the parent directory, the way
//     tidwall/wal's atomic rename forgot to. A new file's contents are
//     still only durable after Sync.
//   - Rename replaces its target atomically.
//
// NewStrictMem models exactly this contract, so a crash test against it
// proves what the engine can rely on from the OS implementation:
// ResetToSyncedState loses every unsynced change, PowerCut any chosen
// subset of them.
package vfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"syscall"
)

// File is an open file. Implementations are safe for concurrent ReadAt and
// WriteAt at distinct offsets; Read and Write use a shared offset and must
// not race with each other.
type File interface {
	io.Reader
	io.Writer
	io.ReaderAt
	io.WriterAt
	io.Closer
	// Sync makes the file's contents durable (fsync).
	Sync() error
	// Truncate changes the file's size.
	Truncate(size int64) error
	// Stat describes the file.
	Stat() (fs.FileInfo, error)
}

// FS is a file system. Paths use the host's separator; see the package
// documentation for what each operation makes durable.
type FS interface {
	// Create creates (with mode PermFile) or truncates the named file for
	// reading and writing.
	Create(name string) (File, error)
	// Open opens the named file for reading.
	Open(name string) (File, error)
	// OpenFile opens the named file with os.O_* flags.
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	// Rename atomically replaces newname with oldname.
	Rename(oldname, newname string) error
	// Remove removes the named file or empty directory.
	Remove(name string) error
	// RemoveAll removes name and everything below it; a missing name is
	// not an error.
	RemoveAll(name string) error
	// MkdirAll creates a directory and any missing parents.
	MkdirAll(dir string, perm fs.FileMode) error
	// ReadDir lists a directory sorted by name.
	ReadDir(dir string) ([]fs.DirEntry, error)
	// Stat describes the named file.
	Stat(name string) (fs.FileInfo, error)
}

// The modes leafbox gives what it stores, as nats-server does: a store
// is readable by its owner and group, never by other local users.
const (
	// PermFile is the mode of a new store file (Create, WriteFile).
	PermFile fs.FileMode = 0o640
	// PermDir is the mode of a new store directory (WriteFile, and the
	// engines' MkdirAll).
	PermDir fs.FileMode = 0o750
	// PermSecret is the mode of a file holding a secret, such as a
	// private key (WriteFilePerm).
	PermSecret fs.FileMode = 0o600
)

// OS is the host file system. Namespace changes fsync the parent
// directory before they return.
var OS FS = osFS{}

type osFS struct{}

func (osFS) Create(name string) (File, error) {
	return osFS{}.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, PermFile)
}

func (osFS) Open(name string) (File, error) { return os.Open(name) }

func (osFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	created := false
	if flag&os.O_CREATE != 0 {
		if _, err := os.Lstat(name); errors.Is(err, fs.ErrNotExist) {
			created = true
		}
	}
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	if created {
		if err := syncDir(filepath.Dir(name)); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

func (osFS) Rename(oldname, newname string) error {
	if err := os.Rename(oldname, newname); err != nil {
		return err
	}
	oldDir, newDir := filepath.Dir(oldname), filepath.Dir(newname)
	if err := syncDir(newDir); err != nil {
		return err
	}
	if oldDir != newDir {
		return syncDir(oldDir)
	}
	return nil
}

func (osFS) Remove(name string) error {
	if err := os.Remove(name); err != nil {
		return err
	}
	return syncDir(filepath.Dir(name))
}

func (osFS) RemoveAll(name string) error {
	if err := os.RemoveAll(name); err != nil {
		return err
	}
	err := syncDir(filepath.Dir(name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

func (osFS) MkdirAll(dir string, perm fs.FileMode) error {
	// Find the directories that do not exist yet, outermost last.
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		missing = append(missing, d)
		if p := filepath.Dir(d); p == d {
			break
		}
	}
	if err := os.MkdirAll(dir, perm); err != nil {
		return err
	}
	// Make each new entry durable in its parent, outermost first.
	for i := len(missing) - 1; i >= 0; i-- {
		if err := syncDir(filepath.Dir(missing[i])); err != nil {
			return err
		}
	}
	return nil
}

func (osFS) ReadDir(dir string) ([]fs.DirEntry, error) { return os.ReadDir(dir) }

func (osFS) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }

// syncDir fsyncs a directory so that entries created, renamed or removed
// in it survive a power cut. File systems that cannot sync directories
// (EINVAL) are tolerated, and Windows, which cannot open one for it, is
// skipped.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, syscall.EINVAL) {
		return nil
	}
	return err
}

// sortEntries orders directory entries by name, as os.ReadDir does.
func sortEntries(es []fs.DirEntry) {
	sort.Slice(es, func(i, j int) bool { return es[i].Name() < es[j].Name() })
}
