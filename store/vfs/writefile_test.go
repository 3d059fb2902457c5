package vfs_test

import (
	"errors"
	"io"
	"path/filepath"
	"testing"

	"github.com/leafbox/leafbox/store/vfs"
)

func readAll(t *testing.T, fsys vfs.FS, name string) string {
	t.Helper()
	f, err := fsys.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestWriteFileAtomicAndDurable checks WriteFile's contract: the new
// contents survive a power cut once it returns, and a failure leaves the
// old contents and no temporary file.
func TestWriteFileAtomicAndDurable(t *testing.T) {
	mem := vfs.NewStrictMem()
	name := filepath.Join("/state", "sub", "x.json")
	if err := vfs.WriteFile(mem, name, []byte("one")); err != nil {
		t.Fatal(err)
	}
	mem.ResetToSyncedState() // power cut
	if got := readAll(t, mem, name); got != "one" {
		t.Fatalf("after power cut: %q, want %q", got, "one")
	}

	boom := errors.New("injected sync failure")
	failing := vfs.Inject(mem, func(op vfs.Op, _ string) error {
		if op == vfs.OpSync {
			return boom
		}
		return nil
	})
	if err := vfs.WriteFile(failing, name, []byte("two")); !errors.Is(err, boom) {
		t.Fatalf("WriteFile with failing sync: %v, want %v", err, boom)
	}
	if got := readAll(t, mem, name); got != "one" {
		t.Fatalf("after a failed write: %q, want the old %q", got, "one")
	}
	if _, err := mem.Stat(name + ".tmp"); err == nil {
		t.Fatal("temporary file left behind")
	}
}
