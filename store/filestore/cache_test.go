package filestore_test

import (
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/vfs"
)

// TestIndexCacheEvictsAndReloads runs the same operations on a stream that
// keeps every index entry in memory and on one without an index cache,
// whose sealed blocks are evicted at every checkpoint: both must show the
// same content throughout, and the second must really load blocks back.
func TestIndexCacheEvictsAndReloads(t *testing.T) {
	for _, c := range []filestore.Compression{filestore.CompressionNone, filestore.CompressionS2} {
		t.Run(c.String(), func(t *testing.T) {
			base := filestore.Config{BlockSize: 2048, SyncInterval: time.Hour, Compression: c}
			base.MaxMsgsPerSubject = 150
			full := base
			full.IndexCache = 1 << 30
			none := base
			none.IndexCache = -1
			fsys := vfs.NewStrictMem()
			ref := mustOpen(t, fsys, "ref", full)
			got := mustOpen(t, fsys, "got", none)
			both := func(fn func(s *filestore.Stream)) {
				fn(ref)
				fn(got)
				require.NoError(t, got.Checkpoint())
				requireSameContent(t, takeDump(t, got), takeDump(t, ref))
			}
			both(func(s *filestore.Stream) {
				for i := range 1000 {
					subj, hdr, data := testMsg(i)
					_, _, err := s.Store(subj, hdr, data, 0)
					require.NoError(t, err)
				}
			})
			// The dump above loaded blocks back; a checkpoint evicts them
			// again, and nothing reads meanwhile.
			require.NoError(t, got.Checkpoint())
			st := got.IndexCache()
			if st.Evicted == 0 || st.Evicted < st.Blocks-1 || st.Resident != 0 {
				t.Fatalf("after a checkpoint without a cache: %+v; want every sealed block evicted", st)
			}
			// Removals inside evicted blocks, and at their edges.
			both(func(s *filestore.Stream) {
				for _, seq := range []uint64{3, 250, 251, 252, 400, 999, 998, 600} {
					_, err := s.Remove(seq, seq == 400)
					require.NoError(t, err)
				}
			})
			both(func(s *filestore.Stream) {
				_, err := s.Purge(store.PurgeOptions{Subject: "dev.2.temp", Keep: 20})
				require.NoError(t, err)
			})
			// The per-subject limit evicts from the front of old blocks.
			both(func(s *filestore.Stream) {
				for i := 1000; i < 1300; i++ {
					subj, hdr, data := testMsg(i)
					_, _, err := s.Store(subj, hdr, data, 0)
					require.NoError(t, err)
				}
			})
			for _, filter := range []string{"dev.1.temp", "dev.*.temp", ">"} {
				for _, from := range []uint64{0, 500, 1100} {
					require.Equal(t, ref.FilteredState(filter, from), got.FilteredState(filter, from))
					rm, rerr := ref.LoadNext(filter, from, nil)
					gm, gerr := got.LoadNext(filter, from, nil)
					require.Equal(t, rerr, gerr)
					if rerr == nil {
						require.Equal(t, rm.Seq, gm.Seq)
					}
				}
				rm, _ := ref.LoadLast(filter, nil)
				gm, _ := got.LoadLast(filter, nil)
				require.Equal(t, rm.Seq, gm.Seq)
			}
			if st := got.IndexCache(); st.Loads == 0 || st.Failed != 0 {
				t.Fatalf("index cache %+v; want loads and no failures", st)
			}
			// A reopened stream starts within its cache too.
			require.NoError(t, got.Close())
			again := mustOpen(t, fsys, "got", none)
			if st := again.IndexCache(); st.Evicted == 0 || st.Evicted < st.Blocks-2 {
				t.Fatalf("reopened: %+v; want the indexed sealed blocks evicted by Open", st)
			}
			requireSameContent(t, takeDump(t, again), takeDump(t, ref))
		})
	}
}

// TestSetIndexCacheShrinks checks that a guardrail can shrink the cache
// of an open stream and grow it again.
func TestSetIndexCacheShrinks(t *testing.T) {
	s := mustOpen(t, vfs.NewStrictMem(), "s", filestore.Config{BlockSize: 4096, IndexCache: 1 << 30})
	for i := range 2000 {
		subj, hdr, data := testMsg(i)
		_, _, err := s.Store(subj, hdr, data, 0)
		require.NoError(t, err)
	}
	require.NoError(t, s.Checkpoint())
	before := s.IndexCache()
	if before.Evicted != 0 || before.Resident == 0 {
		t.Fatalf("with a large cache: %+v", before)
	}
	want := takeDump(t, s)
	s.SetIndexCache(-1)
	if st := s.IndexCache(); st.Resident != 0 || st.Evicted != st.Blocks || st.Limit != 0 {
		t.Fatalf("after SetIndexCache(-1): %+v", st)
	}
	requireSameContent(t, takeDump(t, s), want)
	s.SetIndexCache(0)
	require.Equal(t, int64(filestore.DefaultIndexCache), s.IndexCache().Limit)
}

// TestFilteredScanSkipsEvictedBlocks checks the subject summaries: a
// filtered query loads only the evicted blocks that hold its subject.
func TestFilteredScanSkipsEvictedBlocks(t *testing.T) {
	s := mustOpen(t, vfs.NewStrictMem(), "s", filestore.Config{BlockSize: 2048, IndexCache: -1, SyncInterval: time.Hour})
	store1 := func(subj string) uint64 {
		seq, _, err := s.Store(subj, nil, []byte("payload"), 0)
		require.NoError(t, err)
		return seq
	}
	for range 500 {
		store1("bulk.a")
	}
	rare := store1("rare.b")
	for range 500 {
		store1("bulk.a")
	}
	require.NoError(t, s.Checkpoint())
	before := s.IndexCache()
	if before.Evicted < 10 {
		t.Fatalf("index cache %+v; want many evicted blocks", before)
	}
	for _, filter := range []string{"rare.b", "rare.*"} {
		m, err := s.LoadNext(filter, 1, nil)
		require.NoError(t, err)
		require.Equal(t, rare, m.Seq)
		_, err = s.LoadNext(filter, rare+1, nil)
		require.ErrorIs(t, err, store.ErrNotFound)
	}
	// Without a cache the background maintenance may evict rare.b's
	// block again after any query, so each of the four queries may load
	// it once; a scan through the bulk blocks (more than ten, evicted)
	// would load them all.
	if loads := s.IndexCache().Loads - before.Loads; loads > 4 {
		t.Fatalf("filtered queries loaded %d blocks; want only the one holding rare.b, at most once per query", loads)
	}
}
