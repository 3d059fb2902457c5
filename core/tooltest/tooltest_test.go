package tooltest

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPinnedFindsTheModulesToolsFolder: from a package folder deep in a
// module, pinned finds .tools/bin at the module root, and reports a tool
// that is not there as missing rather than guessing a path.
func TestPinnedFindsTheModulesToolsFolder(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, ".tools", "bin")
	pkg := filepath.Join(root, "a", "b")
	for _, d := range []string{bin, pkg} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(bin, "nats"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(pkg)
	if got, ok := pinned("nats"); !ok || got != filepath.Join(bin, "nats") {
		t.Fatalf("pinned(nats) = %q, %v; want %q", got, ok, filepath.Join(bin, "nats"))
	}
	if got, ok := pinned("nats-server"); ok {
		t.Fatalf("pinned(nats-server) = %q, found a tool that is not installed", got)
	}
}
