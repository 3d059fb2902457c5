package filestore_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/vfs"
)

// TestSeqFromTime checks SeqFromTime against the times of every live
// message, with removals at block edges and the index cache evicting
// every sealed block, before and after a reopen.
func TestSeqFromTime(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	cfg := filestore.Config{BlockSize: 1024, IndexCache: -1, SyncInterval: time.Second}
	s := mustOpen(t, vfs.OS, dir, cfg)
	for i := range 200 {
		_, _, err := s.Store("a.b", nil, []byte("some payload"), 0)
		require.NoError(t, err)
		if i%40 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	for _, seq := range []uint64{1, 2, 50, 51, 52, 120, 200} {
		_, err := s.Remove(seq, false)
		require.NoError(t, err)
	}
	check := func() {
		t.Helper()
		type msg struct {
			seq uint64
			ts  int64
		}
		var msgs []msg
		for seq := uint64(0); ; {
			m, err := s.LoadNext("", seq, nil)
			if errors.Is(err, store.ErrNotFound) {
				break
			}
			require.NoError(t, err)
			msgs = append(msgs, msg{m.Seq, m.Time})
			seq = m.Seq + 1
		}
		want := func(ts int64) uint64 {
			for _, m := range msgs {
				if m.ts >= ts {
					return m.seq
				}
			}
			return s.State().LastSeq + 1
		}
		for _, m := range msgs {
			for _, ts := range []int64{m.ts - 1, m.ts, m.ts + 1} {
				if got := s.SeqFromTime(ts); got != want(ts) {
					t.Fatalf("SeqFromTime(%d) = %d, want %d", ts, got, want(ts))
				}
			}
		}
		require.Equal(t, s.SeqFromTime(0), msgs[0].seq)
		require.Equal(t, s.SeqFromTime(time.Now().Add(time.Hour).UnixNano()), s.State().LastSeq+1)
	}
	check()
	require.NoError(t, s.Close())
	s = mustOpen(t, vfs.OS, dir, cfg)
	check()
}
