package vfs_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store/vfs"
)

// fileSystems are the implementations every behaviour test runs against,
// each with a fresh root directory.
func fileSystems(t *testing.T) map[string]func(t *testing.T) (vfs.FS, string) {
	return map[string]func(t *testing.T) (vfs.FS, string){
		"os":     func(t *testing.T) (vfs.FS, string) { return vfs.OS, t.TempDir() },
		"mem":    func(t *testing.T) (vfs.FS, string) { return vfs.NewMem(), "root" },
		"strict": func(t *testing.T) (vfs.FS, string) { return vfs.NewStrictMem(), "/root" },
		"inject": func(t *testing.T) (vfs.FS, string) {
			return vfs.Inject(vfs.NewMem(), func(vfs.Op, string) error { return nil }), "root"
		},
	}
}

func readFile(t *testing.T, fsys vfs.FS, name string) string {
	t.Helper()
	f, err := fsys.Open(name)
	require.NoError(t, err)
	defer f.Close()
	b, err := io.ReadAll(f)
	require.NoError(t, err)
	return string(b)
}

// TestFSBehaviour checks that every implementation behaves like the host
// file system for what the engines use.
func TestFSBehaviour(t *testing.T) {
	for name, open := range fileSystems(t) {
		t.Run(name, func(t *testing.T) {
			fsys, root := open(t)
			dir := filepath.Join(root, "a", "b")
			require.NoError(t, fsys.MkdirAll(dir, 0o755))
			require.NoError(t, fsys.MkdirAll(dir, 0o755)) // idempotent

			p := filepath.Join(dir, "f")
			f, err := fsys.Create(p)
			require.NoError(t, err)
			n, err := f.Write([]byte("hello world"))
			if n != 11 || err != nil {
				t.Fatalf("Write: %d, %v", n, err)
			}
			_, err = f.WriteAt([]byte("W"), 6)
			require.NoError(t, err)
			_, err = f.WriteAt([]byte("!"), 13)
			require. // past the end: a zero gap
					NoError(t, err)
			buf := make([]byte, 5)
			if n, err := f.ReadAt(buf, 0); n != 5 || err != nil || string(buf) != "hello" {
				t.Fatalf("ReadAt: %d %v %q", n, err, buf)
			}
			if n, err := f.ReadAt(buf, 12); n != 2 || err != io.EOF {
				t.Fatalf("ReadAt at the end: %d %v", n, err)
			}
			require.NoError(t, f.Sync())
			fi, err := f.Stat()
			require.NoError(t, err)
			if fi.Size() != 14 {
				t.Fatalf("size %d", fi.Size())
			}
			require.NoError(t, f.Truncate(5))
			require.NoError(t, f.Close())
			if err := f.Close(); err == nil {
				t.Fatalf("second Close succeeded")
			}
			if got := readFile(t, fsys, p); got != "hello" {
				t.Fatalf("content %q", got)
			}

			// OpenFile flags.
			f, err = fsys.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			require.NoError(t, err)
			_, err = f.Write([]byte("!"))
			require.NoError(t, err)
			require.NoError(t, f.Close())
			if got := readFile(t, fsys, p); got != "hello!" {
				t.Fatalf("after append %q", got)
			}
			if _, err := fsys.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644); !errors.Is(err, fs.ErrExist) {
				t.Fatalf("O_EXCL on an existing file: %v", err)
			}
			if _, err := fsys.Open(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("Open of a missing file: %v", err)
			}
			ro, err := fsys.Open(p)
			require.NoError(t, err)
			if _, err := ro.Write([]byte("x")); err == nil {
				t.Fatalf("Write to a read-only file succeeded")
			}
			ro.Close()

			// Rename replaces, Stat and ReadDir see the result.
			q := filepath.Join(dir, "g")
			f, err = fsys.Create(q)
			require.NoError(t, err)
			f.Write([]byte("old"))
			f.Close()
			require.NoError(t, fsys.Rename(p, q))
			if got := readFile(t, fsys, q); got != "hello!" {
				t.Fatalf("renamed content %q", got)
			}
			if _, err := fsys.Stat(p); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("Stat of the old name: %v", err)
			}
			for _, n := range []string{"c", "a"} {
				f, err := fsys.Create(filepath.Join(dir, n))
				require.NoError(t, err)
				f.Close()
			}
			es, err := fsys.ReadDir(dir)
			require.NoError(t, err)
			var names []string
			for _, e := range es {
				names = append(names, e.Name())
			}
			if strings.Join(names, ",") != "a,c,g" {
				t.Fatalf("ReadDir: %v", names)
			}
			fi, err = fsys.Stat(dir)
			require.NoError(t, err)
			if !fi.IsDir() {
				t.Fatalf("Stat of a directory: not a directory")
			}
			require.

				// Remove and RemoveAll.
				NoError(t, fsys.Remove(filepath.Join(dir, "a")))
			if err := fsys.Remove(filepath.Join(dir, "a")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("second Remove: %v", err)
			}
			if err := fsys.Remove(dir); err == nil {
				t.Fatalf("Remove of a non-empty directory succeeded")
			}
			require.NoError(t, fsys.RemoveAll(filepath.Join(root, "a")))
			require.NoError(t, fsys.RemoveAll(filepath.Join(root, "a")))
			if _, err := fsys.Stat(q); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("Stat after RemoveAll: %v", err)
			}
		})
	}
}

// TestStrictMemDropsUnsynced simulates power cuts.
func TestStrictMemDropsUnsynced(t *testing.T) {
	m := vfs.NewStrictMem()
	require.NoError(t, m.MkdirAll("d", 0o755))
	f, err := m.Create("d/f")
	require.NoError(t, err)
	f.Write([]byte("synced"))
	require.NoError(t, f.Sync())
	f.Write([]byte(" lost"))
	g, err := m.Create("d/never-synced")
	require.NoError(t, err)
	g.Write([]byte("lost"))

	m.ResetToSyncedState()
	if got := readFile(t, m, "d/f"); got != "synced" {
		t.Fatalf("after reset %q", got)
	}
	// A created file survives (its directory entry is durable), empty.
	if got := readFile(t, m, "d/never-synced"); got != "" {
		t.Fatalf("unsynced file %q", got)
	}
	require.
		// Handles stay usable; a truncation is only durable once synced.
		NoError(t, f.Truncate(2))
	m.ResetToSyncedState()
	if got := readFile(t, m, "d/f"); got != "synced" {
		t.Fatalf("unsynced truncate survived: %q", got)
	}
	require.NoError(t, f.Truncate(2))
	require.NoError(t, f.Sync())
	m.ResetToSyncedState()
	if got := readFile(t, m, "d/f"); got != "sy" {
		t.Fatalf("synced truncate lost: %q", got)
	}
	require.
		// Rename is durable at once and carries the synced content along.
		NoError(t, m.Rename("d/f", "d/h"))
	m.ResetToSyncedState()
	if got := readFile(t, m, "d/h"); got != "sy" {
		t.Fatalf("renamed %q", got)
	}
	if !strings.Contains(m.String(), "d/h 2 (synced 2)") {
		t.Fatalf("String:\n%s", m)
	}

	// NewMem never loses anything.
	n := vfs.NewMem()
	f, _ = n.Create("x")
	f.Write([]byte("kept"))
	n.ResetToSyncedState()
	if got := readFile(t, n, "x"); got != "kept" {
		t.Fatalf("NewMem lost %q", got)
	}
}

// TestInject checks that the injector sees every operation with its path
// and that its error replaces the operation.
func TestInject(t *testing.T) {
	var seen []string
	full := false
	fsys := vfs.Inject(vfs.NewMem(), func(op vfs.Op, path string) error {
		seen = append(seen, op.String()+" "+path)
		if full && op == vfs.OpWrite {
			return syscall.ENOSPC
		}
		return nil
	})
	require.NoError(t, fsys.MkdirAll("d", 0o755))
	f, err := fsys.Create("d/f")
	require.NoError(t, err)
	_, err = f.Write([]byte("a"))
	require.NoError(t, err)
	full = true
	if _, err := f.WriteAt([]byte("b"), 1); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("injected ENOSPC: %v", err)
	}
	full = false
	f.Sync()
	f.Close()
	fsys.Rename("d/f", "d/g")
	fsys.Remove("d/g")
	want := "mkdirall d,create d/f,write d/f,write d/f,sync d/f,close d/f,rename d/g,remove d/g"
	if got := strings.Join(seen, ","); got != want {
		t.Fatalf("operations:\n got %s\nwant %s", got, want)
	}
}

func TestTrigger(t *testing.T) {
	boom := errors.New("boom")
	tr := vfs.NewTrigger(2, boom)
	fsys := vfs.Inject(vfs.NewMem(), tr.Fail)
	require.NoError(t, fsys.MkdirAll("d", 0o755)) // 1
	f, err := fsys.Create("d/f")
	require. // 2
			NoError(t, err)
	if _, err := f.Read(make([]byte, 1)); errors.Is(err, boom) {
		t.Fatalf("reads do not count")
	}
	if _, err := f.Write([]byte("x")); !errors.Is(err, boom) || !tr.Fired() {
		t.Fatalf("third mutation: %v", err)
	}
	if err := f.Sync(); !errors.Is(err, boom) {
		t.Fatalf("later mutations fail too: %v", err)
	}
	tr.Disarm()
	if _, err := f.Write([]byte("x")); err != nil {
		t.Fatalf("after Disarm: %v", err)
	}
	if tr.Seen() != 4 {
		t.Fatalf("Seen %d", tr.Seen())
	}
	only := vfs.NewTrigger(0, boom, vfs.OpSync)
	fsys = vfs.Inject(vfs.NewMem(), only.Fail)
	f, err = fsys.Create("f")
	require.NoError(t, err)
	if _, err := f.Write([]byte("x")); err != nil {
		t.Fatalf("unselected op failed: %v", err)
	}
	if err := f.Sync(); !errors.Is(err, boom) {
		t.Fatalf("selected op: %v", err)
	}
	if vfs.OpSync.String() != "sync" || vfs.Op(99).String() != "op(99)" || vfs.OpRead.Mutates() {
		t.Fatalf("Op helpers")
	}
}

// TestStrictMemPowerCut keeps every subset of the unsynced changes of two
// files in turn: each file ends up as its synced contents with exactly the
// kept changes applied in order, a kept write past a lost one leaving
// zeros, and the result is what a later power cut starts from.
func TestStrictMemPowerCut(t *testing.T) {
	setup := func() (*vfs.MemFS, vfs.File, vfs.File) {
		m := vfs.NewStrictMem()
		f, err := m.Create("a")
		require.NoError(t, err)
		g, err := m.Create("b")
		require.NoError(t, err)
		_, err = f.Write([]byte("base"))
		require.NoError(t, err)
		require.NoError(t, f.Sync())
		require.NoError(t, g.Sync()) // the Create's truncation is synced
		f.Write([]byte("-one"))      // change 0
		g.Write([]byte("two"))       // change 1
		f.Write([]byte("-three"))    // change 2
		require.NoError(t, f.Truncate(10))
		return m, f, g
	}
	want := map[int][2]string{
		0b0000: {"base", ""},
		0b0001: {"base-one", ""},
		0b0010: {"base", "two"},
		0b0100: {"base\x00\x00\x00\x00-three", ""},
		0b0101: {"base-one-three", ""},
		0b1000: {"base\x00\x00\x00\x00\x00\x00", ""},
		0b1101: {"base-one-t", ""},
		0b1111: {"base-one-t", "two"},
	}
	for mask, w := range want {
		m, _, _ := setup()
		require.Equal(t, 4, m.UnsyncedChanges())
		m.PowerCut(func(i int) bool { return mask&(1<<i) != 0 })
		require.Equal(t, w[0], readFile(t, m, "a"))
		require.Equal(t, w[1], readFile(t, m, "b"))
		require.Equal(t, 0, m.UnsyncedChanges())
		m.ResetToSyncedState()
		require.Equal(t, w[0], readFile(t, m, "a"))
	}
	// Synced changes are out of reach.
	m, f, _ := setup()
	require.NoError(t, f.Sync())
	require.Equal(t, 1, m.UnsyncedChanges())
	m.ResetToSyncedState()
	require.Equal(t, "base-one-t", readFile(t, m, "a"))
	require.Equal(t, "", readFile(t, m, "b"))
}
