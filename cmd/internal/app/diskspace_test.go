package app

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
	err := validateErr(t, "leafnodes: {remotes: [{url: 'nats://127.0.0.1:1'}]}\n"+
		"uplinks: [{name: a, subjects: [a.>], hub_subject_prefix: s., min_free_disk: -1}]\n")
	requireErrorContains(t, err, "uplinks[0].min_free_disk: must not be negative")
}
