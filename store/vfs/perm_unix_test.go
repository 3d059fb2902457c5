//go:build unix

package vfs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/leafbox/leafbox/store/vfs"
)

// TestOSModes: under the usual umask 022, files the store creates are
// 0640 and its directories 0750; a secret is 0600, even when a crash left
// a wider temporary file behind.
func TestOSModes(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "d")
	mode := func(name string) fs.FileMode {
		t.Helper()
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}
	state := filepath.Join(dir, "state", "x.json")
	if err := vfs.WriteFile(vfs.OS, state, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if m := mode(state); m != 0o640 {
		t.Errorf("WriteFile: mode %o, want 640", m)
	}
	if m := mode(filepath.Dir(state)); m != 0o750 {
		t.Errorf("WriteFile's directory: mode %o, want 750", m)
	}
	f, err := vfs.OS.Create(filepath.Join(dir, "blk"))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if m := mode(filepath.Join(dir, "blk")); m != 0o640 {
		t.Errorf("Create: mode %o, want 640", m)
	}
	secret := filepath.Join(dir, "state", "id.nk")
	if err := os.WriteFile(secret+".tmp", []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := vfs.WriteFilePerm(vfs.OS, secret, []byte("SU..."), vfs.PermSecret); err != nil {
		t.Fatal(err)
	}
	if m := mode(secret); m != 0o600 {
		t.Errorf("WriteFilePerm(PermSecret): mode %o, want 600", m)
	}
}
