package filestore_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/vfs"
)

// verifyFixture writes a stream of several blocks with deletions, closes
// it and returns its directory and final state.
func verifyFixture(t *testing.T, compression filestore.Compression) (string, store.State) {
	t.Helper()
	return verifyFixtureWith(t, filestore.Config{Compression: compression})
}

// verifyFixtureWith is verifyFixture with cfg's compression and
// encryption.
func verifyFixtureWith(t *testing.T, cfg filestore.Config) (string, store.State) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "msgs")
	cfg.BlockSize, cfg.SyncInterval = 4096, time.Minute
	s, err := filestore.Open(vfs.OS, dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		subj, hdr, data := testMsg(i)
		if _, _, err := s.Store(subj, hdr, data, 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, seq := range []uint64{1, 2, 50, 51, 52, 299} {
		if _, err := s.Remove(seq, seq == 50); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	st := s.State()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, st
}

// filesWithExt lists the directory's files with an extension, sorted.
func filesWithExt(t *testing.T, dir, ext string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+ext))
	if err != nil || len(m) == 0 {
		t.Fatalf("no %s files in %s: %v", ext, dir, err)
	}
	sort.Strings(m)
	return m
}

// A cleanly closed stream verifies without a problem, and Verify counts
// what Open finds.
func TestVerifyCleanStream(t *testing.T) {
	for _, c := range []filestore.Compression{filestore.CompressionNone, filestore.CompressionS2} {
		dir, st := verifyFixture(t, c)
		r, err := filestore.Verify(vfs.OS, dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Problems) != 0 {
			t.Fatalf("compression %v: problems %v", c, r.Problems)
		}
		if r.Msgs != st.Msgs || r.Bytes != st.Bytes || r.FirstSeq != st.FirstSeq || r.LastSeq != st.LastSeq || r.Subjects != st.NumSubjects {
			t.Fatalf("compression %v: verify counts %d msgs %d bytes seq %d..%d %d subjects, Open %+v", c, r.Msgs, r.Bytes, r.FirstSeq, r.LastSeq, r.Subjects, st)
		}
		if r.Blocks < 3 || r.Indexes != r.Blocks {
			t.Fatalf("compression %v: %d blocks, %d indexes", c, r.Blocks, r.Indexes)
		}
	}
}

// A truncated block and a flipped bit in a block or an index are damage
// that names the file.
func TestVerifyFindsDamage(t *testing.T) {
	for _, tc := range []struct {
		name string
		ext  string
		pick func([]string) string
		hurt func(t *testing.T, path string)
		want string
	}{
		{"truncated sealed block", ".blk", first, truncateBy(7), "the block was truncated"},
		{"truncated last block", ".blk", last, truncateBy(3), "truncated"},
		{"flipped bit in a record", ".blk", first, flipAt(100), "corrupt records"},
		{"flipped bit in a block header", ".blk", first, flipAt(20), "block header"},
		{"flipped bit in an index", ".idx", first, flipAt(70), "index"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, _ := verifyFixture(t, filestore.CompressionNone)
			path := tc.pick(filesWithExt(t, dir, tc.ext))
			tc.hurt(t, path)
			r, err := filestore.Verify(vfs.OS, dir)
			if err != nil {
				t.Fatal(err)
			}
			if !r.Damaged() {
				t.Fatalf("no damage found: %v", r.Problems)
			}
			var found bool
			for _, p := range r.Problems {
				if p.Damage && strings.HasPrefix(p.File, strings.TrimSuffix(path, tc.ext)) && strings.Contains(p.String(), tc.want) {
					found = true
				}
			}
			if !found {
				t.Fatalf("no damage of %s mentioning %q: %v", path, tc.want, r.Problems)
			}
		})
	}
}

// A compressed block with a flipped bit is damage too.
func TestVerifyFindsDamageInCompressedBlock(t *testing.T) {
	dir, _ := verifyFixture(t, filestore.CompressionS2)
	path := filesWithExt(t, dir, ".blk")[0]
	flipAt(200)(t, path)
	r, err := filestore.Verify(vfs.OS, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Damaged() {
		t.Fatalf("no damage found: %v", r.Problems)
	}
}

// The consumer log verifies, replays to the recorded state, and a
// truncated or flipped log is damage.
func TestVerifyConsumerLog(t *testing.T) {
	write := func(t *testing.T) string {
		dir := t.TempDir()
		c, err := filestore.OpenConsumerStore(vfs.OS, dir)
		if err != nil {
			t.Fatal(err)
		}
		for i := uint64(1); i <= 20; i++ {
			st := &store.ConsumerState{
				Delivered: store.SequencePair{Consumer: i, Stream: i},
				AckFloor:  store.SequencePair{Consumer: i / 2, Stream: i / 2},
				Pending:   map[uint64]store.Pending{i: {Sequence: i, Timestamp: int64(i)}},
			}
			if err := c.Update(st); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	dir := write(t)
	r, err := filestore.VerifyConsumer(vfs.OS, dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Damaged() || r.State.Delivered.Stream != 20 || r.State.AckFloor.Stream != 10 || r.Frames == 0 {
		t.Fatalf("clean log: %+v", r)
	}
	for name, hurt := range map[string]func(*testing.T, string){"truncated": truncateBy(5), "flipped": flipAt(30)} {
		dir := write(t)
		hurt(t, filepath.Join(dir, "consumer.log"))
		r, err := filestore.VerifyConsumer(vfs.OS, dir)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Damaged() {
			t.Fatalf("%s log: no damage found: %+v", name, r)
		}
	}
}

func first(s []string) string { return s[0] }
func last(s []string) string  { return s[len(s)-1] }

func truncateBy(n int64) func(*testing.T, string) {
	return func(t *testing.T, path string) {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(path, fi.Size()-n); err != nil {
			t.Fatal(err)
		}
	}
}

func flipAt(off int) func(*testing.T, string) {
	return func(t *testing.T, path string) {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if off >= len(b) {
			t.Fatalf("%s has %d bytes, cannot flip byte %d", path, len(b), off)
		}
		b[off] ^= 0x04
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
