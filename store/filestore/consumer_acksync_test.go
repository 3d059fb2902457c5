package filestore_test

import (
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/vfs"
)

// TestConsumerStoreSyncForAckSync: with a sync interval, an update is
// lost to a power cut until Sync returns, and kept once it has; Sync on a
// closed store is store.ErrClosed.
func TestConsumerStoreSyncForAckSync(t *testing.T) {
	cfg := filestore.ConsumerConfig{SyncInterval: time.Hour}
	floorAfterCut := func(sync bool) uint64 {
		t.Helper()
		mem := vfs.NewStrictMem()
		c, err := filestore.OpenConsumerStoreConfig(mem, "c", cfg)
		require.NoError(t, err)
		require.NoError(t, c.Update(&store.ConsumerState{Delivered: store.SequencePair{Consumer: 2, Stream: 2}}))
		require.NoError(t, c.Sync())
		require.NoError(t, c.Update(&store.ConsumerState{Delivered: store.SequencePair{Consumer: 2, Stream: 2},
			AckFloor: store.SequencePair{Consumer: 2, Stream: 2}}))
		if sync {
			require.NoError(t, c.Sync())
			require.NoError(t, c.Sync()) // nothing left: no error
		}
		mem.ResetToSyncedState()
		after, err := filestore.OpenConsumerStoreConfig(mem, "c", cfg)
		require.NoError(t, err)
		defer after.Close()
		st, err := after.State()
		require.NoError(t, err)
		require.Equal(t, st.Delivered.Stream, uint64(2))
		require.NoError(t, c.Close())
		if err := c.Sync(); err != store.ErrClosed {
			t.Fatalf("Sync after Close: %v, want store.ErrClosed", err)
		}
		return st.AckFloor.Stream
	}
	require.Equal(t, floorAfterCut(false), uint64(0))
	require.Equal(t, floorAfterCut(true), uint64(2))
}
