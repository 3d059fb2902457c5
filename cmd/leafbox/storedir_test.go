package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// TestSecondProcessOnStoreDirRefused runs two leafbox processes on one
// store directory: the second exits with an error naming the directory,
// the lock and the first one's pid, and leaves the first one's stream
// alone. After the first is killed (-9), the kernel has dropped its lock
// and a new process starts on the store with every acknowledged message.
func TestSecondProcessOnStoreDirRefused(t *testing.T) {
	dir := t.TempDir()
	storeDir := filepath.Join(dir, "store")
	cfg := jsTestConfig(t, dir, storeDir)
	ctx := testContext(t)

	first, u := startJS(t, cfg, dir)
	_, js := jsConnect(t, u)
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ONE", Subjects: []string{"one.>"}, Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	const n = 3
	for i := range n {
		if _, err := js.Publish(ctx, "one.x", []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}

	second := start(t, "run", "--config", cfg, "--ports-file-dir", t.TempDir())
	if code := second.wait(); code != 1 {
		t.Fatalf("second process on %s: exit code %d, want 1; log:\n%s", storeDir, code, second.log())
	}
	want := fmt.Sprintf("store dir %s is in use by pid %d (lock %s)", storeDir, first.cmd.Process.Pid, filepath.Join(storeDir, "LOCK"))
	if !strings.Contains(second.log(), want) {
		t.Fatalf("second process's log lacks %q:\n%s", want, second.log())
	}
	if info, err := s.Info(ctx); err != nil || info.State.Msgs != n {
		t.Fatalf("first process's stream after the refused start: %+v, %v", info, err)
	}

	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	first.wait()
	third, u := startJS(t, cfg, dir)
	defer stopJS(t, third)
	_, js = jsConnect(t, u)
	s, err = js.Stream(ctx, "ONE")
	if err != nil {
		t.Fatalf("stream after kill -9 and restart: %v; log:\n%s", err, third.log())
	}
	if st := s.CachedInfo().State; st.Msgs != n {
		t.Fatalf("stream after kill -9 and restart: %+v", st)
	}
	if _, err := os.Stat(filepath.Join(storeDir, "streams", "ONE", "meta.json")); err != nil {
		t.Fatalf("stream not in the streams subtree: %v", err)
	}
}
