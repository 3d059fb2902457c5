package storedir

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/leafbox/leafbox/store/vfs"
)

// tree lists every entry under root in fsys: directories as "dir/", files
// with their contents.
func tree(t *testing.T, fsys vfs.FS, root string) []string {
	t.Helper()
	var out []string
	var walk func(dir string)
	walk = func(dir string) {
		ents, err := fsys.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			rel, _ := filepath.Rel(root, p)
			if e.IsDir() {
				out = append(out, rel+"/")
				walk(p)
				continue
			}
			f, err := fsys.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, rel+"="+string(b))
		}
	}
	walk(root)
	return out
}

// writeTree creates files (path=contents, relative to root) in fsys.
func writeTree(t *testing.T, fsys vfs.FS, root string, files ...string) {
	t.Helper()
	for _, f := range files {
		rel, data, _ := strings.Cut(f, "=")
		if err := vfs.WriteFile(fsys, filepath.Join(root, rel), []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
}

// oldLayout is a store as leafbox wrote it before the subtrees: streams
// A, "outbox", "streams" and "state" in the root, the uplinks "up1" and
// "msgs" (whose outbox was the "outbox" stream's block directory), their
// state files and the clock's.
var oldLayout = []string{
	"A/meta.json=A", "A/msgs/1.blk=a1", "A/obs/c1/meta.json=c1", "A/obs/c1/consumer.log=l1",
	"outbox/meta.json=O", "outbox/meta.json.tmp=half", "outbox/msgs/1.blk=o1", "outbox/obs/c2/meta.json=c2",
	"outbox/up1/1.blk=u1", "outbox/up1.state.json=s1", "outbox/up1.state.json.tmp=half",
	"outbox/msgs.state.json=sm", "outbox/scheduler.state.json=sched",
	"streams/meta.json=S", "streams/msgs/1.blk=s1",
	"state/meta.json=T", "state/msgs/1.blk=t1",
	"clock.json=clk", "clock.json.tmp=half",
	"notastream/file=x",
}

// wantMigrated is oldLayout migrated.
func wantMigrated() []string {
	return []string{
		"deadletter/",
		"notastream/", "notastream/file=x",
		"outbox/", "outbox/up1/", "outbox/up1/1.blk=u1",
		"state/", "state/clock.json=clk", "state/scheduler.state.json=sched",
		"state/uplink-msgs.state.json=sm", "state/uplink-up1.state.json=s1",
		"streams/",
		"streams/A/", "streams/A/meta.json=A", "streams/A/msgs/", "streams/A/msgs/1.blk=a1",
		"streams/A/obs/", "streams/A/obs/c1/", "streams/A/obs/c1/consumer.log=l1", "streams/A/obs/c1/meta.json=c1",
		"streams/outbox/", "streams/outbox/meta.json=O", "streams/outbox/msgs/", "streams/outbox/msgs/1.blk=o1",
		"streams/outbox/obs/", "streams/outbox/obs/c2/", "streams/outbox/obs/c2/meta.json=c2",
		"streams/state/", "streams/state/meta.json=T", "streams/state/msgs/", "streams/state/msgs/1.blk=t1",
		"streams/streams/", "streams/streams/meta.json=S", "streams/streams/msgs/", "streams/streams/msgs/1.blk=s1",
	}
}

func requireTree(t *testing.T, got, want []string) {
	t.Helper()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("tree:\n got  %q\n want %q", got, want)
	}
}

// TestMigrateOldLayout moves every kind to its subtree, tells the
// "outbox" and "streams" streams from the subtree roots they occupied, and
// does nothing when run again.
func TestMigrateOldLayout(t *testing.T) {
	mem := vfs.NewMem()
	writeTree(t, mem, "/s", oldLayout...)
	moved, err := migrate(mem, At("/s"))
	if err != nil {
		t.Fatal(err)
	}
	if len(moved) == 0 {
		t.Fatal("nothing reported moved")
	}
	requireTree(t, tree(t, mem, "/s"), wantMigrated())
	moved, err = migrate(mem, At("/s"))
	if err != nil || len(moved) != 0 {
		t.Fatalf("second run: moved %q, err %v", moved, err)
	}
	requireTree(t, tree(t, mem, "/s"), wantMigrated())
}

// TestMigrateCrashAnywhere cuts the power at each namespace change of a
// migration in turn (the file system keeps only what was synced), then
// migrates again: the result is always the fully migrated store.
func TestMigrateCrashAnywhere(t *testing.T) {
	boom := errors.New("power cut")
	for k := 1; ; k++ {
		mem := vfs.NewStrictMem()
		writeTree(t, mem, "/s", oldLayout...)
		n := 0
		failing := vfs.Inject(mem, func(op vfs.Op, _ string) error {
			if op.Mutates() {
				if n++; n >= k {
					return boom
				}
			}
			return nil
		})
		_, err := migrate(failing, At("/s"))
		if err != nil && !errors.Is(err, boom) {
			t.Fatalf("k=%d: %v", k, err)
		}
		mem.ResetToSyncedState()
		if _, err2 := migrate(mem, At("/s")); err2 != nil {
			t.Fatalf("k=%d: migrating again: %v", k, err2)
		}
		requireTree(t, tree(t, mem, "/s"), wantMigrated())
		if err == nil {
			t.Logf("%d crash points", k-1)
			return
		}
	}
}

// TestMigrateNewLayoutUntouched: a store in the new layout, with a stream
// named like each subtree and an uplink named "msgs", is left alone.
func TestMigrateNewLayoutUntouched(t *testing.T) {
	mem := vfs.NewMem()
	files := []string{
		"streams/outbox/meta.json=O", "streams/streams/meta.json=S", "streams/state/meta.json=T",
		"outbox/msgs/1.blk=m", "deadletter/msgs/1.blk=d", "state/clock.json=c", "state/uplink-msgs.state.json=u",
	}
	writeTree(t, mem, "/s", files...)
	before := tree(t, mem, "/s")
	moved, err := migrate(mem, At("/s"))
	if err != nil || len(moved) != 0 {
		t.Fatalf("moved %q, err %v", moved, err)
	}
	requireTree(t, tree(t, mem, "/s"), before)
}

// TestMigrateRefusesToOverwrite: an old stream whose name is taken in
// streams/ stops the start with both paths named, and nothing is lost.
func TestMigrateRefusesToOverwrite(t *testing.T) {
	mem := vfs.NewMem()
	writeTree(t, mem, "/s", "A/meta.json=old", "streams/A/meta.json=new")
	_, err := migrate(mem, At("/s"))
	if err == nil || !strings.Contains(err.Error(), "/s/A to /s/streams/A: it exists") {
		t.Fatalf("err = %v", err)
	}
}

// TestOpenNamesTheCause: a store directory that is a file, or a LOCK that
// is a directory, fails with the path and the reason.
func TestOpenNamesTheCause(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(file); err == nil || !strings.Contains(err.Error(), "store dir "+file) ||
		!strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("store dir is a file: %v", err)
	}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "LOCK", "msgs"), 0o750); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(root); err == nil || !strings.Contains(err.Error(), "lock "+filepath.Join(root, "LOCK")+" is a directory") {
		t.Fatalf("LOCK is a directory: %v", err)
	}
}
