package outbox

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/vfs"
)

// gatedHub is a dedupHub that is unreachable until open is closed.
type gatedHub struct {
	*dedupHub
	open chan struct{}
}

func (h *gatedHub) WaitReady(ctx context.Context) error {
	select {
	case <-h.open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestDiskFull fills the outbox's disk (every write and file creation
// fails with ENOSPC) while the hub is down and while it forwards, then
// frees it. The outbox drops the oldest messages per its discard-old
// limit and the messages it cannot store, counts both by reason, reports
// the last error, never loses or duplicates a stored message, and works
// normally once space returns.
func TestDiskFull(t *testing.T) {
	const limit = 300
	var full atomic.Bool
	fsys := vfs.Inject(vfs.NewMem(), func(op vfs.Op, _ string) error {
		if full.Load() && (op == vfs.OpWrite || op == vfs.OpCreate) {
			return syscall.ENOSPC
		}
		return nil
	})
	s, err := filestore.Open(fsys, "outbox/tel", filestore.Config{
		Config:    store.Config{Name: "tel", MaxMsgs: limit, Discard: store.DiscardOld},
		BlockSize: 8 << 10, // many blocks: full disks hit rolls too
	})
	require.NoError(t, err)
	defer s.Close()
	hub := &gatedHub{dedupHub: newDedupHub(), open: make(chan struct{})}
	ob := newOutbox(t, s, hub, Config{Name: "tel", ServerName: "gw", Stream: "S", RetryMax: DefaultRetryMin})
	hub.attach(ob)
	require.NoError(t, ob.Start(context.Background()))
	capture := func(from, to int) (failed int) {
		t.Helper()
		for i := from; i < to; i++ {
			err := ob.Capture("telemetry.p0", nil, []byte(strconv.Itoa(i)))
			switch {
			case err == nil:
			case errors.Is(err, store.ErrStoreFull) && errors.Is(err, syscall.ENOSPC):
				failed++
			default:
				t.Fatalf("capture %d: %v", i, err)
			}
		}
		return failed
	}

	// Hub down: the limit drops the oldest.
	if n := capture(0, 400); n != 0 {
		t.Fatalf("%d captures failed with space left", n)
	}
	if st := ob.Status(); st.Dropped[DropLimits] != 100 || st.BacklogMsgs != limit {
		t.Fatalf("over the limit: %+v", st)
	}

	// Disk full, hub down: new messages are refused, counted and
	// reported; the backlog stays.
	full.Store(true)
	if n := capture(400, 450); n != 50 {
		t.Fatalf("%d of 50 captures failed on a full disk", n)
	}
	st := ob.Status()
	if st.Dropped[DropStoreFull] != 50 || st.Dropped[DropLimits] != 100 || st.BacklogMsgs != limit ||
		!strings.Contains(st.LastError, "no space left on device") {
		t.Fatalf("disk full: %+v", st)
	}

	// Disk full, hub up: what is stored reaches the hub, but removing it
	// needs space, so the forwarder retries and keeps it.
	close(hub.open)
	waitStatus(t, ob, "the forwarder retries", func(st Status) bool {
		return st.Retries >= 2 && strings.Contains(st.LastError, "remove")
	})
	if st := ob.Status(); st.BacklogMsgs != limit || st.Acked != 0 {
		t.Fatalf("forwarding on a full disk: %+v", st)
	}

	// Space returns: the retried round removes the backlog; capture and
	// forward as usual.
	full.Store(false)
	waitStatus(t, ob, "the backlog drains", func(st Status) bool { return st.BacklogMsgs == 0 })
	if n := capture(450, 500); n != 0 {
		t.Fatalf("%d captures failed after space returned", n)
	}
	waitStatus(t, ob, "the outbox drains", func(st Status) bool { return st.BacklogMsgs == 0 })
	got := hub.perProducer(t, 1)[0]
	var want []int
	for i := 100; i < 500; i++ {
		if i < 400 || i >= 450 {
			want = append(want, i)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("hub holds %v,\nwant %v", got, want)
	}
	st = ob.Status()
	if st.Dropped[DropStoreFull] != 50 || st.Dropped[DropLimits] != 100 || st.Stored != 450 || st.Acked != 350 {
		t.Fatalf("after the disk was freed: %+v", st)
	}
	t.Logf("status: %+v", st)
}

// TestDiskLowDropsOldest: while Config.DiskLow reports a low disk, each
// capture first drops the backlog's oldest message (counted as disk_low),
// so the newest messages are kept and the hub receives them in order once
// it is reachable; with enough space nothing more is dropped.
func TestDiskLowDropsOldest(t *testing.T) {
	var low atomic.Bool
	s, err := filestore.Open(vfs.NewMem(), "outbox/tel", filestore.Config{Config: store.Config{Name: "tel"}})
	require.NoError(t, err)
	defer s.Close()
	hub := &gatedHub{dedupHub: newDedupHub(), open: make(chan struct{})}
	ob := newOutbox(t, s, hub, Config{Name: "tel", ServerName: "gw", Stream: "S", DiskLow: low.Load})
	hub.attach(ob)
	require.NoError(t, ob.Start(context.Background()))
	capture := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			require.NoError(t, ob.Capture("telemetry.p0", nil, []byte(strconv.Itoa(i))))
		}
	}
	capture(0, 10)
	low.Store(true)
	capture(10, 15) // drops 0..4
	low.Store(false)
	capture(15, 20)
	st := ob.Status()
	if st.BacklogMsgs != 15 || st.Dropped[DropDiskLow] != 5 || len(st.Dropped) != 1 {
		t.Fatalf("after 5 captures on a low disk: backlog %d, dropped %v", st.BacklogMsgs, st.Dropped)
	}
	close(hub.open)
	waitStatus(t, ob, "the outbox drains", func(st Status) bool { return st.BacklogMsgs == 0 })
	var want []int
	for i := 5; i < 20; i++ {
		want = append(want, i)
	}
	if got := hub.perProducer(t, 1)[0]; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("hub holds %v, want %v", got, want)
	}
	if st := ob.Status(); st.Dropped[DropDiskLow] != 5 || st.Acked != 15 || len(st.Dropped) != 1 {
		t.Fatalf("after draining: %+v", st)
	}
}
