package filestore_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/vfs"
)

var writeFormat = flag.Bool("write-format", false, "rewrite testdata/format-v1 with the current code")

// formatV1Dir holds a stream written by format version 1 of the block and
// index files, by the code before the index cache (328e73b; the cache did
// not change the format): S2 blocks with index files, removals and a
// purge.
const formatV1Dir = "testdata/format-v1"

// fillFormatV1 writes the stream kept in formatV1Dir.
func fillFormatV1(t *testing.T, dir string) {
	s, err := filestore.Open(vfs.OS, dir, filestore.Config{BlockSize: 1024, Compression: filestore.CompressionS2})
	require.NoError(t, err)
	for i := range 120 {
		subj, hdr, data := testMsg(i)
		_, _, err := s.Store(subj, hdr, data, 0)
		require.NoError(t, err)
	}
	for _, seq := range []uint64{2, 40, 41, 90} {
		_, err := s.Remove(seq, false)
		require.NoError(t, err)
	}
	_, err = s.Purge(store.PurgeOptions{Subject: "dev.4.temp", Keep: 3})
	require.NoError(t, err)
	require.NoError(t, s.Checkpoint())
	require.NoError(t, s.Close())
}

// TestOpensFormatV1 opens the committed version 1 stream, without and with
// an index cache, and checks every message. Run with -write-format to
// regenerate it (only when the format version changes, keeping the old
// directory for this test).
func TestOpensFormatV1(t *testing.T) {
	if *writeFormat {
		require.NoError(t, os.RemoveAll(formatV1Dir))
		fillFormatV1(t, formatV1Dir)
	}
	want := t.TempDir()
	fillFormatV1(t, want)
	ref := mustOpen(t, vfs.OS, want, filestore.Config{})
	for _, cache := range []int64{-1, 0} {
		t.Run(fmt.Sprint(cache), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "s")
			require.NoError(t, os.CopyFS(dir, os.DirFS(formatV1Dir)))
			s := mustOpen(t, vfs.OS, dir, filestore.Config{BlockSize: 1024, Compression: filestore.CompressionS2, IndexCache: cache, SyncInterval: time.Second})
			require.Equal(t, filestore.Report{Blocks: s.Recovered().Blocks}, s.Recovered())
			requireSameContent(t, takeDump(t, s), takeDump(t, ref))
			subj, hdr, data := testMsg(500)
			seq, _, err := s.Store(subj, hdr, data, 0)
			require.NoError(t, err)
			require.Equal(t, ref.State().LastSeq+1, seq)
		})
	}
}
