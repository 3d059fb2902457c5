package node

import (
	"path/filepath"
	"testing"
)

func TestDiskLow(t *testing.T) {
	dir := t.TempDir()
	if diskLow(dir, 1)() {
		t.Fatal("a temporary directory reports less than 1 byte free")
	}
	if !diskLow(dir, 1<<62)() {
		t.Fatal("a temporary directory reports 4 EiB free")
	}
	if diskLow(filepath.Join(dir, "missing"), 1<<62)() {
		t.Fatal("a directory that cannot be queried counts as low")
	}
}
