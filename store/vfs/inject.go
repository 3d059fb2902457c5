package vfs

import (
	"fmt"
	"io/fs"
	"os"
	"sync"
)

// Op names an FS or File operation for error injection.
type Op uint8

// The operations Inject reports. OpenFile reports OpCreate when its flags
// include os.O_CREATE and OpOpen otherwise; Read and ReadAt report OpRead,
// Write and WriteAt report OpWrite.
const (
	OpCreate Op = iota + 1
	OpOpen
	OpRead
	OpWrite
	OpSync
	OpTruncate
	OpClose
	OpStat
	OpRename
	OpRemove
	OpRemoveAll
	OpMkdirAll
	OpReadDir
)

var opNames = [...]string{
	OpCreate: "create", OpOpen: "open", OpRead: "read", OpWrite: "write", OpSync: "sync",
	OpTruncate: "truncate", OpClose: "close", OpStat: "stat", OpRename: "rename",
	OpRemove: "remove", OpRemoveAll: "removeall", OpMkdirAll: "mkdirall", OpReadDir: "readdir",
}

// String returns the operation's lowercase name.
func (op Op) String() string {
	if int(op) < len(opNames) && opNames[op] != "" {
		return opNames[op]
	}
	return fmt.Sprintf("op(%d)", uint8(op))
}

// Mutates reports whether op can change what is stored: create, write,
// sync, truncate, rename, remove, removeall and mkdirall.
func (op Op) Mutates() bool {
	switch op {
	case OpCreate, OpWrite, OpSync, OpTruncate, OpRename, OpRemove, OpRemoveAll, OpMkdirAll:
		return true
	}
	return false
}

// Inject wraps fsys so that fn is consulted before every operation with
// the operation and the path it concerns (for a rename, the new name). A
// non-nil error from fn is returned instead of performing the operation
// (Close still closes the underlying file). fn is called concurrently when
// the file system is used concurrently.
func Inject(fsys FS, fn func(op Op, path string) error) FS {
	return &injectFS{fs: fsys, fn: fn}
}

type injectFS struct {
	fs FS
	fn func(op Op, path string) error
}

func (i *injectFS) Create(name string) (File, error) {
	if err := i.fn(OpCreate, name); err != nil {
		return nil, pathErr("create", name, err)
	}
	f, err := i.fs.Create(name)
	if err != nil {
		return nil, err
	}
	return &injectFile{f: f, name: name, fn: i.fn}, nil
}

func (i *injectFS) Open(name string) (File, error) {
	return i.OpenFile(name, os.O_RDONLY, 0)
}

func (i *injectFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	op := OpOpen
	if flag&os.O_CREATE != 0 {
		op = OpCreate
	}
	if err := i.fn(op, name); err != nil {
		return nil, pathErr(op.String(), name, err)
	}
	f, err := i.fs.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &injectFile{f: f, name: name, fn: i.fn}, nil
}

func (i *injectFS) Rename(oldname, newname string) error {
	if err := i.fn(OpRename, newname); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	return i.fs.Rename(oldname, newname)
}

func (i *injectFS) Remove(name string) error {
	if err := i.fn(OpRemove, name); err != nil {
		return pathErr("remove", name, err)
	}
	return i.fs.Remove(name)
}

func (i *injectFS) RemoveAll(name string) error {
	if err := i.fn(OpRemoveAll, name); err != nil {
		return pathErr("removeall", name, err)
	}
	return i.fs.RemoveAll(name)
}

func (i *injectFS) MkdirAll(dir string, perm fs.FileMode) error {
	if err := i.fn(OpMkdirAll, dir); err != nil {
		return pathErr("mkdirall", dir, err)
	}
	return i.fs.MkdirAll(dir, perm)
}

func (i *injectFS) ReadDir(dir string) ([]fs.DirEntry, error) {
	if err := i.fn(OpReadDir, dir); err != nil {
		return nil, pathErr("readdir", dir, err)
	}
	return i.fs.ReadDir(dir)
}

func (i *injectFS) Stat(name string) (fs.FileInfo, error) {
	if err := i.fn(OpStat, name); err != nil {
		return nil, pathErr("stat", name, err)
	}
	return i.fs.Stat(name)
}

type injectFile struct {
	f    File
	name string
	fn   func(op Op, path string) error
}

func (f *injectFile) Read(p []byte) (int, error) {
	if err := f.fn(OpRead, f.name); err != nil {
		return 0, pathErr("read", f.name, err)
	}
	return f.f.Read(p)
}

func (f *injectFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.fn(OpRead, f.name); err != nil {
		return 0, pathErr("read", f.name, err)
	}
	return f.f.ReadAt(p, off)
}

func (f *injectFile) Write(p []byte) (int, error) {
	if err := f.fn(OpWrite, f.name); err != nil {
		return 0, pathErr("write", f.name, err)
	}
	return f.f.Write(p)
}

func (f *injectFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fn(OpWrite, f.name); err != nil {
		return 0, pathErr("write", f.name, err)
	}
	return f.f.WriteAt(p, off)
}

func (f *injectFile) Sync() error {
	if err := f.fn(OpSync, f.name); err != nil {
		return pathErr("sync", f.name, err)
	}
	return f.f.Sync()
}

func (f *injectFile) Truncate(size int64) error {
	if err := f.fn(OpTruncate, f.name); err != nil {
		return pathErr("truncate", f.name, err)
	}
	return f.f.Truncate(size)
}

func (f *injectFile) Stat() (fs.FileInfo, error) {
	if err := f.fn(OpStat, f.name); err != nil {
		return nil, pathErr("stat", f.name, err)
	}
	return f.f.Stat()
}

func (f *injectFile) Close() error {
	err := f.fn(OpClose, f.name)
	if cerr := f.f.Close(); err == nil {
		return cerr
	}
	return pathErr("close", f.name, err)
}

// Trigger is an injection function that lets the first n matching
// operations succeed and fails the n+1st and every later matching one with
// its error, like a disk that fills up or a machine that loses power at a
// chosen write. Pass its Fail method to Inject. A Trigger is safe for
// concurrent use.
type Trigger struct {
	mu    sync.Mutex
	left  int64
	err   error
	ops   []Op
	seen  int64
	fired bool
	off   bool
}

// NewTrigger returns a Trigger that fails matching operations with err
// once n of them have succeeded. With no ops, every operation for which
// Op.Mutates is true matches.
func NewTrigger(n int64, err error, ops ...Op) *Trigger {
	return &Trigger{left: n, err: err, ops: ops}
}

// Fail is the injection function: it returns nil or the Trigger's error.
func (t *Trigger) Fail(op Op, path string) error {
	if !t.matches(op) {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.off {
		return nil
	}
	t.seen++
	if t.left > 0 {
		t.left--
		return nil
	}
	t.fired = true
	return t.err
}

func (t *Trigger) matches(op Op) bool {
	if len(t.ops) == 0 {
		return op.Mutates()
	}
	for _, o := range t.ops {
		if o == op {
			return true
		}
	}
	return false
}

// Fired reports whether the Trigger has failed an operation.
func (t *Trigger) Fired() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.fired
}

// Seen returns how many matching operations the Trigger has been asked
// about.
func (t *Trigger) Seen() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.seen
}

// Disarm makes every later operation succeed, as when space is freed.
func (t *Trigger) Disarm() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.off = true
}
