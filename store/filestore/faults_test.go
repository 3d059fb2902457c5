package filestore_test

import (
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/storetest"
	"github.com/leafbox/leafbox/store/vfs"
)

// faultFS injects err into the operations ops while on is set.
type faultFS struct {
	on  atomic.Bool
	err error
	ops []vfs.Op
}

func (f *faultFS) fail(op vfs.Op, path string) error {
	if !f.on.Load() {
		return nil
	}
	for _, o := range f.ops {
		if o == op {
			return f.err
		}
	}
	return nil
}

// TestDiskFull fills the disk (ENOSPC on every write, create and sync)
// while a stream is in use: Store, Remove and Purge fail with an error
// wrapping both store.ErrStoreFull and the OS error, nothing changes, no
// sequence is used up, and once space returns the stream carries on and
// keeps every acknowledged message across a reopen.
func TestDiskFull(t *testing.T) {
	configs := []struct {
		name string
		cfg  filestore.Config
	}{
		{"sync", filestore.Config{BlockSize: 512}},
		{"sync/s2", filestore.Config{BlockSize: 512, Compression: filestore.CompressionS2}},
		{"async", filestore.Config{BlockSize: 512, SyncInterval: time.Hour}},
	}
	for _, c := range configs {
		for _, op := range []vfs.Op{vfs.OpWrite, vfs.OpCreate, vfs.OpSync} {
			t.Run(c.name+"/"+op.String(), func(t *testing.T) {
				mem := vfs.NewStrictMem()
				faults := &faultFS{err: syscall.ENOSPC, ops: []vfs.Op{op}}
				fsys := vfs.Inject(mem, faults.fail)
				s := mustOpen(t, fsys, "s", c.cfg)
				var acked []storetest.AckedMsg
				var err error
				for i := range 20 {
					if acked, err = storeAcked(s, i, acked); err != nil {
						t.Fatal(err)
					}
				}
				before := takeDump(t, s)
				faults.on.Store(true)
				failures := 0
				for i := 20; i < 60; i++ {
					// An asynchronous stream buffers until its buffer or
					// block fills, then must refuse.
					acked, err = storeAcked(s, i, acked)
					if err == nil {
						continue
					}
					failures++
					if !errors.Is(err, store.ErrStoreFull) || !errors.Is(err, syscall.ENOSPC) {
						t.Fatalf("Store on a full disk: %v, want ErrStoreFull wrapping ENOSPC", err)
					}
				}
				if failures == 0 {
					t.Fatalf("no Store failed on a full disk")
				}
				if c.cfg.SyncInterval == 0 && op != vfs.OpCreate {
					// Every Store failed and left nothing behind; a failed
					// fsync uses up the sequence (the record may be on
					// disk), a failed write does not.
					got := takeDump(t, s)
					if op == vfs.OpSync {
						got.state.LastSeq, got.state.NumDeleted = before.state.LastSeq, before.state.NumDeleted
					}
					requireSameContent(t, got, before)
					if ok, err := s.Remove(3, false); ok || !errors.Is(err, store.ErrStoreFull) {
						t.Fatalf("Remove on a full disk = %v, %v", ok, err)
					}
					if _, err := s.Purge(store.PurgeOptions{}); !errors.Is(err, store.ErrStoreFull) {
						t.Fatalf("Purge on a full disk: %v", err)
					}
					_, err := s.Load(3, nil)
					switch {
					case op == vfs.OpWrite && err != nil:
						t.Fatalf("Load after a failed Remove: %v", err)
					case op == vfs.OpSync && errors.Is(err, store.ErrDeleted):
						// After a failed fsync the outcome is unknown; the
						// stream went ahead, and a later fsync makes it
						// durable.
						acked = append(acked[:2], acked[3:]...)
					}
				}
				faults.on.Store(false)
				for i := 60; i < 80; i++ {
					if acked, err = storeAcked(s, i, acked); err != nil {
						t.Fatalf("Store after space returned: %v", err)
					}
				}
				for i := 1; i < len(acked) && op != vfs.OpSync; i++ {
					if acked[i].Seq != acked[i-1].Seq+1 {
						t.Fatalf("a failed Store used up a sequence: %d after %d", acked[i].Seq, acked[i-1].Seq)
					}
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				mem.ResetToSyncedState()
				s = mustOpen(t, mem, "s", c.cfg)
				storetest.CheckPrefix(t, acked, s)
				if got := s.State().Msgs; got != uint64(len(acked)) {
					t.Fatalf("%d messages after reopen, %d acknowledged:\n%v\n%v", got, len(acked), takeDump(t, s).msgs, acked)
				}
			})
		}
	}
}

// TestIOError makes every write fail with EIO for a while: Store reports
// it (not as ErrStoreFull) and the stream recovers when the device does.
func TestIOError(t *testing.T) {
	mem := vfs.NewStrictMem()
	faults := &faultFS{err: syscall.EIO, ops: []vfs.Op{vfs.OpWrite, vfs.OpSync}}
	s := mustOpen(t, vfs.Inject(mem, faults.fail), "s", filestore.Config{BlockSize: 512})
	var acked []storetest.AckedMsg
	acked, _ = storeAcked(s, 0, acked)
	faults.on.Store(true)
	_, err := storeAcked(s, 1, nil)
	if !errors.Is(err, syscall.EIO) || errors.Is(err, store.ErrStoreFull) {
		t.Fatalf("Store with EIO: %v", err)
	}
	faults.on.Store(false)
	for i := 2; i < 30; i++ {
		if acked, err = storeAcked(s, i, acked); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	mem.ResetToSyncedState()
	storetest.CheckPrefix(t, acked, mustOpen(t, mem, "s", filestore.Config{BlockSize: 512}))
}

// TestSyncFailureRemovesMessage fails one fsync: the Store waiting on it
// gets the error and its message is gone from the stream, also after a
// reopen (no phantom), while later messages are unaffected.
func TestSyncFailureRemovesMessage(t *testing.T) {
	mem := vfs.NewStrictMem()
	var failNext atomic.Bool
	fsys := vfs.Inject(mem, func(op vfs.Op, path string) error {
		if op == vfs.OpSync && failNext.CompareAndSwap(true, false) {
			return syscall.EIO
		}
		return nil
	})
	s := mustOpen(t, fsys, "s", filestore.Config{})
	var acked []storetest.AckedMsg
	acked, _ = storeAcked(s, 0, acked)
	failNext.Store(true)
	if _, err := storeAcked(s, 1, nil); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Store with a failed fsync: %v", err)
	}
	if _, err := s.Load(2, nil); !errors.Is(err, store.ErrDeleted) {
		t.Fatalf("Load of the failed message: %v, want ErrDeleted", err)
	}
	for i := 2; i < 5; i++ {
		acked, _ = storeAcked(s, i, acked)
	}
	s.Close()
	s = mustOpen(t, mem, "s", filestore.Config{})
	storetest.CheckPrefix(t, acked, s)
	if got := s.State().Msgs; got != uint64(len(acked)) {
		t.Fatalf("%d messages after reopen, want %d", got, len(acked))
	}
}

// TestIndexRebuilt deletes or damages the index files of a stream with
// several sealed (and compressed) blocks, removals and purges: Open
// rebuilds them from the blocks, the content is the same, and the next
// Open reads the rewritten index files again.
func TestIndexRebuilt(t *testing.T) {
	for _, c := range crashConfigs {
		for _, damage := range []string{"delete", "truncate", "flip", "swap"} {
			t.Run(c.name+"/"+damage, func(t *testing.T) {
				mem := vfs.NewStrictMem()
				s := mustOpen(t, mem, "s", c.cfg)
				for i := range 60 {
					if _, err := storeAcked(s, i, nil); err != nil {
						t.Fatal(err)
					}
				}
				s.Remove(7, false)
				s.Remove(30, true)
				s.Purge(store.PurgeOptions{Subject: "dev.1.temp", Keep: 2})
				want := takeDump(t, s)
				s.Close()
				idx := names(t, mem, "s", ".idx")
				if len(idx) < 3 {
					t.Fatalf("only %d index files", len(idx))
				}
				for i, name := range idx {
					p := "s/" + name
					switch damage {
					case "delete":
						mem.Remove(p)
					case "truncate":
						b := readAll(t, mem, p)
						writeAll(t, mem, p, b[:len(b)/2])
					case "flip":
						b := readAll(t, mem, p)
						b[len(b)/2] ^= 0x10
						writeAll(t, mem, p, b)
					case "swap":
						// Another block's index: valid, but not this
						// block's.
						other := "s/" + idx[(i+1)%len(idx)]
						writeAll(t, mem, p, readAll(t, mem, other))
					}
				}
				if damage == "swap" {
					// Leave the last one alone so the swap is not a
					// rotation back to itself.
				}
				s = mustOpen(t, mem, "s", c.cfg)
				r := s.Recovered()
				if r.ScannedBlocks != len(idx) || r.Lost() || r.TruncatedBytes != 0 {
					t.Fatalf("report %v, want %d blocks scanned", r, len(idx))
				}
				requireSameContent(t, takeDump(t, s), want)
				s.Close()
				s = mustOpen(t, mem, "s", c.cfg)
				if r := s.Recovered(); r.ScannedBlocks != 0 || r.StaleIndexes != 0 {
					t.Fatalf("second open: %v, want the rebuilt index files used", r)
				}
				requireSameContent(t, takeDump(t, s), want)
			})
		}
	}
}

// TestAsyncLossWindow shows what SyncInterval trades: a power cut loses
// the messages of the last interval, never older ones, and Sync closes
// the window.
func TestAsyncLossWindow(t *testing.T) {
	mem := vfs.NewStrictMem()
	cfg := filestore.Config{SyncInterval: time.Hour}
	s := mustOpen(t, mem, "s", cfg)
	var acked []storetest.AckedMsg
	for i := range 10 {
		acked, _ = storeAcked(s, i, acked)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	for i := 10; i < 20; i++ {
		storeAcked(s, i, nil)
	}
	mem.ResetToSyncedState() // power cut without Close
	s2 := mustOpen(t, mem, "s", cfg)
	storetest.CheckPrefix(t, acked, s2)
	if got := s2.State().Msgs; got != 10 {
		t.Fatalf("%d messages survived, want the 10 synced", got)
	}
	storetest.CheckResume(t, acked, s2, "resume")
	_ = fmt.Sprint()
}
