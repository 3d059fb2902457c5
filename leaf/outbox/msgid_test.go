package outbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/vfs"
)

// TestIDsUniqueAcrossOutboxLifetimes runs one gateway's uplink against a
// deduplicating hub through the ways an outbox is lost or replaced: a
// restart, a restore from an old copy that still held messages the hub
// has since stored, and a wiped outbox. The hub must end with every
// message exactly once: the re-sent ones carry the id they were first
// sent with, and every new capture an id the hub has never seen (a
// sequence alone repeats after a restore or a wipe).
func TestIDsUniqueAcrossOutboxLifetimes(t *testing.T) {
	root := t.TempDir()
	live := filepath.Join(root, "outbox", "tel")
	hub := newDedupHub()
	var s *filestore.Stream
	var ob *Outbox
	open := func() {
		t.Helper()
		var err error
		s, err = filestore.Open(vfs.OS, live, filestore.Config{Config: store.Config{Name: "tel"}})
		require.NoError(t, err)
		ob, err = New(s, hub, Config{Name: "tel", ServerName: "gw", Stream: "S"})
		require.NoError(t, err)
		hub.attach(ob)
	}
	stop := func() {
		t.Helper()
		require.NoError(t, ob.Close())
		require.NoError(t, s.Close())
	}
	next := 0
	publish := func(n int) {
		t.Helper()
		for range n {
			require.NoError(t, ob.Capture("telemetry.p0", nil, []byte(strconv.Itoa(next))))
			next++
		}
	}
	drain := func() {
		t.Helper()
		require.NoError(t, ob.Start(context.Background()))
		waitStatus(t, ob, "the outbox drains", func(st Status) bool { return st.BacklogMsgs == 0 && st.InFlight == 0 })
	}
	hubHolds := func(want int) {
		t.Helper()
		got := hub.perProducer(t, 1)[0]
		wantList := make([]int, want)
		for i := range wantList {
			wantList[i] = i
		}
		if fmt.Sprint(got) != fmt.Sprint(wantList) {
			t.Fatalf("hub holds %v,\nwant 0 to %d once each", got, want-1)
		}
	}

	// Five captured while the hub is unreachable; a backup of the outbox
	// is taken with them pending.
	open()
	publish(5)
	stop()
	backup := filepath.Join(root, "backup")
	require.NoError(t, os.CopyFS(backup, os.DirFS(live)))

	// A restart forwards them; five more follow.
	open()
	drain()
	publish(5)
	waitStatus(t, ob, "10 acked", func(st Status) bool { return st.Acked == 10 })
	stop()
	hubHolds(10)
	require.

		// The old backup is restored: its five are sent again, with their
		// first ids (the hub drops them), and three new ones follow.
		NoError(t, os.RemoveAll(live))
	require.NoError(t, os.CopyFS(live, os.DirFS(backup)))
	open()
	publish(3)
	drain()
	stop()
	hubHolds(13)
	require.

		// The outbox is wiped: the three new ones still reach the hub.
		NoError(t, os.RemoveAll(live))
	open()
	publish(3)
	drain()
	stop()
	hubHolds(16)
}

// TestCaptureFixesTheID: the id is in the stored message, a publisher's
// own Nats-Msg-Id is kept (case-insensitively), and ids of one Outbox
// count up under one epoch.
func TestCaptureFixesTheID(t *testing.T) {
	s := newMem(t, store.Config{})
	ob := newOutbox(t, s, newFakeHub(false), Config{})
	if p := ob.IDPrefix(); !strings.HasPrefix(p, "gw.up.") || len(p) != len("gw.up.")+epochChars+1 || !strings.HasSuffix(p, ".") {
		t.Fatalf("IDPrefix %q", p)
	}
	require.NoError(t, ob.Capture("a", nil, []byte("1")))
	require.NoError(t, ob.Capture("a", []byte("NATS/1.0\r\nK: v\r\n\r\n"), []byte("2")))
	require.NoError(t, ob.Capture("a", []byte("NATS/1.0\r\nnats-msg-id: mine\r\n\r\n"), []byte("3")))
	require.NoError(t, ob.Capture("a", nil, []byte("4")))
	want := []string{
		"NATS/1.0\r\nNats-Msg-Id: " + ob.IDPrefix() + "1\r\n\r\n",
		"NATS/1.0\r\nK: v\r\nNats-Msg-Id: " + ob.IDPrefix() + "2\r\n\r\n",
		"NATS/1.0\r\nnats-msg-id: mine\r\n\r\n",
		"NATS/1.0\r\nNats-Msg-Id: " + ob.IDPrefix() + "3\r\n\r\n",
	}
	var sm store.Msg
	for i, w := range want {
		m, err := s.Load(uint64(i+1), &sm)
		require.NoError(t, err)
		if string(m.Header) != w {
			t.Errorf("stored message %d header %q, want %q", i+1, m.Header, w)
		}
	}
	if other := newOutbox(t, newMem(t, store.Config{}), newFakeHub(false), Config{}); other.IDPrefix() == ob.IDPrefix() {
		t.Fatalf("two outboxes share the id prefix %q", ob.IDPrefix())
	}
}

// TestCaptureHeaderAllocatesOnce: the header Capture stores (the
// publisher's, with a Nats-Msg-Id added) is built in one allocation, with
// or without a header from the publisher, and none when it has an id or
// when the buffer it is built in has room (Capture's pooled buffers).
func TestCaptureHeaderAllocatesOnce(t *testing.T) {
	ob := newOutbox(t, newMem(t, store.Config{}), newFakeHub(false), Config{})
	for _, tc := range []struct {
		hdr    string
		allocs float64
	}{
		{"", 1},
		{"NATS/1.0\r\nA: b\r\n\r\n", 1},
		{"NATS/1.0\r\nNats-Msg-Id: 7\r\n\r\n", 0},
	} {
		hdr := []byte(tc.hdr)
		if n := testing.AllocsPerRun(100, func() { _, _ = ob.captureHeader(nil, hdr) }); n != tc.allocs {
			t.Errorf("captureHeader(%q): %v allocations, want %v", tc.hdr, n, tc.allocs)
		}
		room := make([]byte, 0, 256)
		if n := testing.AllocsPerRun(100, func() { _, _ = ob.captureHeader(room, hdr) }); n != 0 {
			t.Errorf("captureHeader(%q) into a buffer with room: %v allocations, want 0", tc.hdr, n)
		}
	}
}
