//go:build unix

package storedir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestOpenLockIsExclusive: while a Dir is open, opening the same store
// directory again (here in the same process; cmd/leafbox tests two
// processes) fails naming the directory, the lock and the holder's pid;
// after Close it opens again.
func TestOpenLockIsExclusive(t *testing.T) {
	root := t.TempDir()
	d, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "LOCK"))
	if err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Fatalf("LOCK holds %q (%v), want the pid %d", b, err, os.Getpid())
	}
	_, err = Open(root)
	var inUse *InUseError
	if !errors.As(err, &inUse) || inUse.PID != os.Getpid() {
		t.Fatalf("second Open: %v", err)
	}
	want := fmt.Sprintf("store dir %s is in use by pid %d (lock %s)", root, os.Getpid(), filepath.Join(root, "LOCK"))
	if err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	d2, err := Open(root)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	defer d2.Close()
}

// TestOpenCreatesPrivateLayout: the subtrees are 0750 and the lock file
// 0640, whatever the umask lets through, and subtrees an older leafbox
// made 0755 lose the bits of other users.
func TestOpenCreatesPrivateLayout(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "outbox"), 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, dir := range []string{d.Streams(), d.Outboxes(), d.DeadLetters(), d.State()} {
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m != 0o750 {
			t.Errorf("%s: mode %o, want 750", dir, m)
		}
	}
	fi, err := os.Stat(d.Lock())
	if err != nil {
		t.Fatal(err)
	}
	if m := fi.Mode().Perm(); m != 0o640 {
		t.Errorf("LOCK: mode %o, want 640", m)
	}
}
