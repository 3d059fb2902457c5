package filestore_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/vfs"
)

// headerSeqs lists the messages from start on that LoadNextWithHeader
// finds, checking that each has a header.
func headerSeqs(t *testing.T, s *filestore.Stream, start uint64) []uint64 {
	t.Helper()
	var seqs []uint64
	var sm store.Msg
	for seq := start; ; {
		m, err := s.LoadNextWithHeader(seq, &sm)
		if errors.Is(err, store.ErrNotFound) {
			return seqs
		}
		require.NoError(t, err)
		if len(m.Header) == 0 || m.Seq < seq {
			t.Fatalf("LoadNextWithHeader(%d) = seq %d with header %q", seq, m.Seq, m.Header)
		}
		seqs = append(seqs, m.Seq)
		seq = m.Seq + 1
	}
}

// wantHeaderSeqs lists the messages from start on that carry a header,
// by loading every one.
func wantHeaderSeqs(t *testing.T, s *filestore.Stream, start uint64) []uint64 {
	t.Helper()
	var seqs []uint64
	for seq := start; ; {
		m, err := s.LoadNext("", seq, nil)
		if errors.Is(err, store.ErrNotFound) {
			return seqs
		}
		require.NoError(t, err)
		if len(m.Header) > 0 {
			seqs = append(seqs, m.Seq)
		}
		seq = m.Seq + 1
	}
}

// requireHeaderSeqs checks LoadNextWithHeader against loading every
// message, from several starts.
func requireHeaderSeqs(t *testing.T, s *filestore.Stream) {
	t.Helper()
	st := s.State()
	for _, start := range []uint64{0, st.FirstSeq, st.FirstSeq + 1, (st.FirstSeq + st.LastSeq) / 2, st.LastSeq, st.LastSeq + 1} {
		if got, want := headerSeqs(t, s, start), wantHeaderSeqs(t, s, start); !slices.Equal(got, want) {
			t.Fatalf("from %d: LoadNextWithHeader finds %v, want %v", start, got, want)
		}
	}
}

// TestLoadNextWithHeader stores messages of which few carry a header,
// whole blocks none, removes some of those, and checks that
// LoadNextWithHeader finds exactly those with one: while open, after a
// reopen from the index files (every sealed block evicted, or the
// default cache), and after a reopen that rebuilds the index files from
// the blocks.
func TestLoadNextWithHeader(t *testing.T) {
	cfgs := map[string]filestore.Config{
		"plain":     {BlockSize: 1024},
		"s2":        {BlockSize: 1024, Compression: filestore.CompressionS2},
		"encrypted": {BlockSize: 1024, Encryption: testEncryption(filestore.CipherChaCha)},
	}
	for name, cfg := range cfgs {
		for _, cache := range []int64{-1, 0} {
			t.Run(name+"/"+map[int64]string{-1: "evicted", 0: "cached"}[cache], func(t *testing.T) {
				cfg := cfg
				cfg.IndexCache, cfg.SyncInterval = cache, time.Second
				dir := filepath.Join(t.TempDir(), "s")
				s := mustOpen(t, vfs.OS, dir, cfg)
				for i := range 400 {
					var hdr []byte
					if i%53 == 0 || (i >= 300 && i%3 == 0) {
						hdr = []byte("NATS/1.0\r\nNats-Msg-Id: x\r\n\r\n")
					}
					_, _, err := s.Store("a.b", hdr, []byte("some payload"), 0)
					require.NoError(t, err)
				}
				// Removing the only header message of a block leaves it
				// with none.
				for _, seq := range []uint64{54, 160, 302} {
					_, err := s.Remove(seq, false)
					require.NoError(t, err)
				}
				require.NoError(t, s.Checkpoint())
				requireHeaderSeqs(t, s)
				require.NoError(t, s.Close())

				s = mustOpen(t, vfs.OS, dir, cfg)
				requireHeaderSeqs(t, s)
				require.Equal(t, s.Recovered().ScannedBlocks, 0)
				require.NoError(t, s.Close())

				idx, err := filepath.Glob(filepath.Join(dir, "*.idx"))
				require.NoError(t, err)
				for _, f := range idx {
					require.NoError(t, os.Remove(f))
				}
				s = mustOpen(t, vfs.OS, dir, cfg)
				if s.Recovered().ScannedBlocks == 0 {
					t.Fatal("no block scanned without index files")
				}
				requireHeaderSeqs(t, s)
				require.NoError(t, s.Checkpoint())
				require.NoError(t, s.Close())
				s = mustOpen(t, vfs.OS, dir, cfg)
				requireHeaderSeqs(t, s)
			})
		}
	}
}

// TestLoadNextWithHeaderFormatV1 opens the committed stream whose index
// files are of version 1, which do not say which messages carry a
// header: LoadNextWithHeader still finds every one.
func TestLoadNextWithHeaderFormatV1(t *testing.T) {
	for _, cache := range []int64{-1, 0} {
		dir := filepath.Join(t.TempDir(), "s")
		require.NoError(t, os.CopyFS(dir, os.DirFS(formatV1Dir)))
		s := mustOpen(t, vfs.OS, dir, filestore.Config{BlockSize: 1024, Compression: filestore.CompressionS2, IndexCache: cache, SyncInterval: time.Second})
		require.Equal(t, filestore.Report{Blocks: s.Recovered().Blocks}, s.Recovered())
		requireHeaderSeqs(t, s)
		if len(headerSeqs(t, s, 0)) == 0 {
			t.Fatal("no message with a header")
		}
	}
}

// TestLoadNextWithHeaderSkipsBlocks checks that a stream without headers
// answers LoadNextWithHeader without loading any evicted block's entries.
func TestLoadNextWithHeaderSkipsBlocks(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	cfg := filestore.Config{BlockSize: 1024, IndexCache: -1, SyncInterval: time.Second}
	s := mustOpen(t, vfs.OS, dir, cfg)
	for range 300 {
		_, _, err := s.Store("a.b", nil, []byte("some payload"), 0)
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
	s = mustOpen(t, vfs.OS, dir, cfg)
	if st := s.IndexCache(); st.Evicted == 0 {
		t.Fatalf("no block evicted: %+v", st)
	}
	_, err := s.LoadNextWithHeader(0, nil)
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Equal(t, s.IndexCache().Loads, uint64(0))
}
