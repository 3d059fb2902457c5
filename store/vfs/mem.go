package vfs

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// MemFS is an in-memory FS. NewMem returns one where every write is
// durable at once; NewStrictMem returns one that remembers which file
// contents were synced, so that ResetToSyncedState can simulate a power
// cut. Namespace changes are durable when they return, as the package
// contract promises. MemFS is safe for concurrent use.
type MemFS struct {
	mu     sync.Mutex
	root   *memNode
	strict bool
	// changes numbers the content changes of a strict file system, so
	// PowerCut can name them in the order they were made.
	changes uint64
}

// memNode is a file or directory. Open files point at their node, so a
// removed or renamed file stays usable through its open handles.
type memNode struct {
	dir      bool
	children map[string]*memNode
	// data is the current content; synced the content as of the last
	// Sync (strict file systems only).
	data   []byte
	synced []byte
	dirty  bool
	// unsynced lists the content changes since the last Sync (strict
	// file systems only), for PowerCut.
	unsynced []memChange
	perm     fs.FileMode
	modTime  time.Time
}

// NewMem returns an empty in-memory file system that never loses a write.
func NewMem() *MemFS {
	return &MemFS{root: newDirNode(PermDir)}
}

// NewStrictMem returns an empty in-memory file system that keeps file
// contents written since the last File.Sync apart, so ResetToSyncedState
// can discard them.
func NewStrictMem() *MemFS {
	return &MemFS{root: newDirNode(PermDir), strict: true}
}

func newDirNode(perm fs.FileMode) *memNode {
	return &memNode{dir: true, children: make(map[string]*memNode), perm: perm | fs.ModeDir, modTime: time.Now()}
}

// memChange is one change of a file's contents not yet synced: a write of
// data at off, or (data nil) a truncation to off bytes.
type memChange struct {
	n    uint64 // MemFS.changes when it was made
	off  int64
	data []byte
}

// ResetToSyncedState simulates a power cut: every file's contents revert
// to what they were at its last successful Sync (empty if it was never
// synced). Open handles stay valid and see the reverted contents. On a
// MemFS from NewMem it does nothing.
func (m *MemFS) ResetToSyncedState() {
	m.PowerCut(func(int) bool { return false })
}

// UnsyncedChanges returns how many writes and truncations of file
// contents, in files that still exist, were made since their file's last
// Sync: the changes a power cut may lose. It is 0 on a MemFS from NewMem.
func (m *MemFS) UnsyncedChanges() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.unsyncedLocked())
}

// PowerCut simulates a power cut on a disk that writes cached pages back
// in any order, across files and within one: of the unsynced changes
// (numbered 0 to UnsyncedChanges()-1 in the order they were made, across
// all files), those keep reports true for reached the disk and the others
// are lost. Each file's contents become what it held at its last Sync
// with the kept changes applied in their original order; a kept write
// beyond the end leaves zeros in between. keep(i) false for every i is
// ResetToSyncedState; a seeded random keep makes a reproducible reordering
// crash. Open handles stay valid and see the new contents. On a MemFS
// from NewMem it does nothing.
func (m *MemFS) PowerCut(keep func(i int) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.strict {
		return
	}
	kept := make(map[uint64]bool)
	for i, c := range m.unsyncedLocked() {
		if keep(i) {
			kept[c.n] = true
		}
	}
	m.walkFiles(func(n *memNode) {
		n.data = append([]byte(nil), n.synced...)
		for _, c := range n.unsynced {
			if kept[c.n] {
				n.apply(c)
			}
		}
		n.unsynced = nil
		n.dirty = false
		n.synced = append(n.synced[:0], n.data...)
	})
}

// unsyncedLocked returns the unsynced changes of every file in the order
// they were made; the caller holds m.mu.
func (m *MemFS) unsyncedLocked() []memChange {
	var all []memChange
	m.walkFiles(func(n *memNode) { all = append(all, n.unsynced...) })
	sort.Slice(all, func(i, j int) bool { return all[i].n < all[j].n })
	return all
}

// walkFiles calls fn for every file; the caller holds m.mu.
func (m *MemFS) walkFiles(fn func(n *memNode)) {
	var walk func(n *memNode)
	walk = func(n *memNode) {
		if !n.dir {
			fn(n)
			return
		}
		for _, c := range n.children {
			walk(c)
		}
	}
	walk(m.root)
}

// record notes a change of n's contents for PowerCut: a write of data at
// off, or a truncation to off when data is nil. The caller holds m.mu.
func (m *MemFS) record(n *memNode, off int64, data []byte) {
	if !m.strict {
		return
	}
	m.changes++
	if data != nil {
		data = append([]byte{}, data...)
	}
	n.unsynced = append(n.unsynced, memChange{n: m.changes, off: off, data: data})
}

// apply makes change c to n's contents.
func (n *memNode) apply(c memChange) {
	if c.data == nil {
		n.truncate(c.off)
		return
	}
	n.writeAt(c.data, c.off)
}

// split turns a path into its elements; "", "." and "/" are the root.
func split(name string) []string {
	name = filepath.ToSlash(filepath.Clean(name))
	name = strings.Trim(name, "/")
	if name == "" || name == "." {
		return nil
	}
	return strings.Split(name, "/")
}

// lookup finds the node for name; the caller holds m.mu.
func (m *MemFS) lookup(name string) (*memNode, error) {
	n := m.root
	for _, el := range split(name) {
		if !n.dir {
			return nil, syscall.ENOTDIR
		}
		c, ok := n.children[el]
		if !ok {
			return nil, fs.ErrNotExist
		}
		n = c
	}
	return n, nil
}

// parent finds the directory that holds name and name's last element.
func (m *MemFS) parent(name string) (*memNode, string, error) {
	els := split(name)
	if len(els) == 0 {
		return nil, "", fs.ErrInvalid
	}
	dir, err := m.lookup(strings.Join(els[:len(els)-1], "/"))
	if err != nil {
		return nil, "", err
	}
	if !dir.dir {
		return nil, "", syscall.ENOTDIR
	}
	return dir, els[len(els)-1], nil
}

func pathErr(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// Create implements FS.
func (m *MemFS) Create(name string) (File, error) {
	return m.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, PermFile)
}

// Open implements FS.
func (m *MemFS) Open(name string) (File, error) {
	return m.OpenFile(name, os.O_RDONLY, 0)
}

// OpenFile implements FS. It honours O_RDONLY, O_WRONLY, O_RDWR, O_CREATE,
// O_EXCL, O_TRUNC and O_APPEND.
func (m *MemFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, err := m.parent(name)
	if err != nil {
		if len(split(name)) == 0 {
			return &memFile{fs: m, n: m.root, name: name, read: true}, nil
		}
		return nil, pathErr("open", name, err)
	}
	n, ok := dir.children[base]
	switch {
	case ok && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, pathErr("open", name, fs.ErrExist)
	case !ok && flag&os.O_CREATE == 0:
		return nil, pathErr("open", name, fs.ErrNotExist)
	case !ok:
		n = &memNode{perm: perm, modTime: time.Now()}
		dir.children[base] = n
	}
	acc := flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
	f := &memFile{
		fs:     m,
		n:      n,
		name:   name,
		read:   acc == os.O_RDONLY || acc == os.O_RDWR,
		write:  acc == os.O_WRONLY || acc == os.O_RDWR,
		append: flag&os.O_APPEND != 0,
	}
	if n.dir && f.write {
		return nil, pathErr("open", name, syscall.EISDIR)
	}
	if flag&os.O_TRUNC != 0 && f.write {
		n.data = n.data[:0]
		m.record(n, 0, nil)
		m.touch(n)
	}
	return f, nil
}

// touch marks n modified; the caller holds m.mu.
func (m *MemFS) touch(n *memNode) {
	n.modTime = time.Now()
	if !m.strict {
		n.synced = nil
		return
	}
	n.dirty = true
}

// Rename implements FS.
func (m *MemFS) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	odir, obase, err := m.parent(oldname)
	if err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	n, ok := odir.children[obase]
	if !ok {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: fs.ErrNotExist}
	}
	ndir, nbase, err := m.parent(newname)
	if err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	if t, ok := ndir.children[nbase]; ok && t != n {
		if t.dir != n.dir || (t.dir && len(t.children) > 0) {
			return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: fs.ErrExist}
		}
	}
	delete(odir.children, obase)
	ndir.children[nbase] = n
	return nil
}

// Remove implements FS.
func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, err := m.parent(name)
	if err != nil {
		return pathErr("remove", name, err)
	}
	n, ok := dir.children[base]
	if !ok {
		return pathErr("remove", name, fs.ErrNotExist)
	}
	if n.dir && len(n.children) > 0 {
		return pathErr("remove", name, syscall.ENOTEMPTY)
	}
	delete(dir.children, base)
	return nil
}

// RemoveAll implements FS.
func (m *MemFS) RemoveAll(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, err := m.parent(name)
	if err != nil {
		if err == fs.ErrNotExist {
			return nil
		}
		return pathErr("removeall", name, err)
	}
	delete(dir.children, base)
	return nil
}

// MkdirAll implements FS.
func (m *MemFS) MkdirAll(dir string, perm fs.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.root
	for _, el := range split(dir) {
		c, ok := n.children[el]
		if !ok {
			c = newDirNode(perm)
			n.children[el] = c
		} else if !c.dir {
			return pathErr("mkdir", dir, syscall.ENOTDIR)
		}
		n = c
	}
	return nil
}

// ReadDir implements FS.
func (m *MemFS) ReadDir(dir string) ([]fs.DirEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookup(dir)
	if err != nil {
		return nil, pathErr("readdir", dir, err)
	}
	if !n.dir {
		return nil, pathErr("readdir", dir, syscall.ENOTDIR)
	}
	es := make([]fs.DirEntry, 0, len(n.children))
	for name, c := range n.children {
		es = append(es, fs.FileInfoToDirEntry(c.info(name)))
	}
	sortEntries(es)
	return es, nil
}

// Stat implements FS.
func (m *MemFS) Stat(name string) (fs.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookup(name)
	if err != nil {
		return nil, pathErr("stat", name, err)
	}
	return n.info(path.Base(filepath.ToSlash(name))), nil
}

// String lists every file and its current and synced sizes, for test
// failure messages.
func (m *MemFS) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var lines []string
	var walk func(prefix string, n *memNode)
	walk = func(prefix string, n *memNode) {
		for name, c := range n.children {
			p := path.Join(prefix, name)
			if c.dir {
				lines = append(lines, p+"/")
				walk(p, c)
				continue
			}
			synced := len(c.data)
			if m.strict {
				synced = len(c.synced)
			}
			lines = append(lines, fmt.Sprintf("%s %d (synced %d)", p, len(c.data), synced))
		}
	}
	walk("", m.root)
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func (n *memNode) info(name string) fs.FileInfo {
	return memInfo{name: name, size: int64(len(n.data)), mode: n.perm, modTime: n.modTime, dir: n.dir}
}

// memInfo implements fs.FileInfo.
type memInfo struct {
	name    string
	size    int64
	mode    fs.FileMode
	modTime time.Time
	dir     bool
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) Mode() fs.FileMode  { return i.mode }
func (i memInfo) ModTime() time.Time { return i.modTime }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }

// memFile is an open MemFS file.
type memFile struct {
	fs                  *MemFS
	n                   *memNode
	name                string
	pos                 int64
	read, write, append bool
	closed              bool
}

func (f *memFile) check(op string, write bool) error {
	switch {
	case f.closed:
		return pathErr(op, f.name, fs.ErrClosed)
	case f.n.dir && op != "sync" && op != "stat" && op != "close":
		return pathErr(op, f.name, syscall.EISDIR)
	case write && !f.write:
		return pathErr(op, f.name, syscall.EBADF)
	case !write && !f.read && (op == "read"):
		return pathErr(op, f.name, syscall.EBADF)
	}
	return nil
}

func (f *memFile) Read(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("read", false); err != nil {
		return 0, err
	}
	if f.pos >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.n.data[f.pos:])
	f.pos += int64(n)
	return n, nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("read", false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("read", f.name, fs.ErrInvalid)
	}
	if off >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.n.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("write", true); err != nil {
		return 0, err
	}
	if f.append {
		f.pos = int64(len(f.n.data))
	}
	f.writeAt(p, f.pos)
	f.pos += int64(len(p))
	return len(p), nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("write", true); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("write", f.name, fs.ErrInvalid)
	}
	f.writeAt(p, off)
	return len(p), nil
}

// writeAt stores p at off, growing the file with zeros; the caller holds
// the file system's lock.
func (f *memFile) writeAt(p []byte, off int64) {
	f.n.writeAt(p, off)
	f.fs.record(f.n, off, p)
	f.fs.touch(f.n)
}

// writeAt stores p at off in n's contents, growing them with zeros.
func (n *memNode) writeAt(p []byte, off int64) {
	if end := off + int64(len(p)); end > int64(len(n.data)) {
		if end > int64(cap(n.data)) {
			grown := make([]byte, len(n.data), max(end, 2*int64(cap(n.data))))
			copy(grown, n.data)
			n.data = grown
		}
		old := len(n.data)
		n.data = n.data[:end]
		clear(n.data[old:])
	}
	copy(n.data[off:], p)
}

// truncate cuts or extends (with zeros) n's contents to size bytes.
func (n *memNode) truncate(size int64) {
	if size <= int64(len(n.data)) {
		n.data = n.data[:size]
		return
	}
	n.writeAt(make([]byte, size-int64(len(n.data))), int64(len(n.data)))
}

func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("truncate", true); err != nil {
		return err
	}
	if size < 0 {
		return pathErr("truncate", f.name, fs.ErrInvalid)
	}
	f.n.truncate(size)
	f.fs.record(f.n, size, nil)
	f.fs.touch(f.n)
	return nil
}

func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("sync", false); err != nil {
		return err
	}
	if f.fs.strict && f.n.dirty {
		f.n.synced = append(f.n.synced[:0], f.n.data...)
		f.n.dirty = false
		f.n.unsynced = nil
	}
	return nil
}

func (f *memFile) Stat() (fs.FileInfo, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("stat", false); err != nil {
		return nil, err
	}
	return f.n.info(path.Base(filepath.ToSlash(f.name))), nil
}

func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return pathErr("close", f.name, fs.ErrClosed)
	}
	f.closed = true
	return nil
}
