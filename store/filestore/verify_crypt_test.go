package filestore_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/vfs"
)

// otherKey is a server key that opens none of the test stores.
var otherKey = []byte("not the key: 0123456789abcdef0123")

// snapshotFiles returns every file of dir and its bytes.
func snapshotFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

// An encrypted stream, of either cipher, verifies with its key without a
// problem and with the counts Open finds, whether the cipher is given or
// read from stream.key, and also with the key as prev_key; verifying
// changes no file. Without a key it is refused; with a wrong one it is
// ErrWrongKey, never damage.
func TestVerifyEncryptedStream(t *testing.T) {
	for _, c := range []filestore.Cipher{filestore.CipherChaCha, filestore.CipherAES} {
		t.Run(c.String(), func(t *testing.T) {
			dir, st := verifyFixtureWith(t, filestore.Config{Encryption: testEncryption(c)})
			before := snapshotFiles(t, dir)
			for name, enc := range map[string]filestore.Encryption{
				"configured":    testEncryption(c),
				"key only":      {Key: testKey},
				"previous key":  {Cipher: c, Key: otherKey, PrevKey: testKey},
				"wrong cipher?": {Cipher: otherCipher(c), Key: testKey},
			} {
				r, err := filestore.VerifyWithKey(vfs.OS, dir, enc)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				wantProblems := 0
				if name == "wrong cipher?" {
					wantProblems = 1 // a warning that leafbox would refuse it
				}
				if len(r.Problems) != wantProblems || r.Damaged() {
					t.Fatalf("%s: problems %v", name, r.Problems)
				}
				if r.Cipher != c {
					t.Fatalf("%s: cipher %v", name, r.Cipher)
				}
				if r.Msgs != st.Msgs || r.Bytes != st.Bytes || r.FirstSeq != st.FirstSeq || r.LastSeq != st.LastSeq || r.Subjects != st.NumSubjects {
					t.Fatalf("%s: verify counts %d msgs %d bytes seq %d..%d %d subjects, Open %+v", name, r.Msgs, r.Bytes, r.FirstSeq, r.LastSeq, r.Subjects, st)
				}
				if r.Blocks < 3 || r.Indexes != r.Blocks {
					t.Fatalf("%s: %d blocks, %d indexes", name, r.Blocks, r.Indexes)
				}
			}
			if r, err := filestore.VerifyWithKey(vfs.OS, dir, filestore.Encryption{}); !errors.Is(err, filestore.ErrEncryptedVerify) {
				t.Fatalf("no key: %+v, %v; want ErrEncryptedVerify", r, err)
			}
			for _, enc := range []filestore.Encryption{{Key: otherKey}, {Cipher: c, Key: otherKey, PrevKey: otherKey[1:]}} {
				r, err := filestore.VerifyWithKey(vfs.OS, dir, enc)
				if !errors.Is(err, filestore.ErrWrongKey) || r != nil {
					t.Fatalf("wrong key: %+v, %v; want ErrWrongKey", r, err)
				}
				if !strings.Contains(err.Error(), dir) || bytes.Contains([]byte(err.Error()), otherKey) {
					t.Fatalf("wrong key error %q: want the directory named and no key shown", err)
				}
			}
			after := snapshotFiles(t, dir)
			if len(after) != len(before) {
				t.Fatalf("files changed: %d, were %d", len(after), len(before))
			}
			for name, b := range before {
				if !bytes.Equal(after[name], b) {
					t.Fatalf("%s changed", name)
				}
			}
		})
	}
}

func otherCipher(c filestore.Cipher) filestore.Cipher {
	if c == filestore.CipherAES {
		return filestore.CipherChaCha
	}
	return filestore.CipherAES
}

// A flipped byte in a sealed record, a sealed index or the data key file
// of an encrypted stream is damage naming the file (and, for a record,
// the offset), found with the right key.
func TestVerifyEncryptedFindsDamage(t *testing.T) {
	for _, c := range []filestore.Cipher{filestore.CipherChaCha, filestore.CipherAES} {
		for _, tc := range []struct {
			name string
			ext  string
			off  int
			want string
		}{
			{"flipped byte in a record", ".blk", 100, "corrupt records"},
			{"flipped byte in a sealed index", ".idx", 30, "fails authentication"},
		} {
			t.Run(c.String()+"/"+tc.name, func(t *testing.T) {
				dir, _ := verifyFixtureWith(t, filestore.Config{Encryption: testEncryption(c)})
				path := filesWithExt(t, dir, tc.ext)[0]
				flipAt(tc.off)(t, path)
				r, err := filestore.VerifyWithKey(vfs.OS, dir, testEncryption(c))
				if err != nil {
					t.Fatal(err)
				}
				var found *filestore.Problem
				for i, p := range r.Problems {
					if p.Damage && p.File == path && strings.Contains(p.What, tc.want) {
						found = &r.Problems[i]
					}
				}
				if found == nil {
					t.Fatalf("no damage of %s mentioning %q: %v", path, tc.want, r.Problems)
				}
				if tc.ext == ".blk" && !strings.Contains(found.What, "the first at offset ") {
					t.Fatalf("damage does not name the offset: %s", found)
				}
			})
		}
	}
}

// The block's first record starts right after the 48-byte header: a flip
// at byte 100 of the file is reported at offset 48, the record's start.
func TestVerifyEncryptedNamesRecordOffset(t *testing.T) {
	dir, _ := verifyFixtureWith(t, filestore.Config{Encryption: testEncryption(filestore.CipherChaCha)})
	path := filesWithExt(t, dir, ".blk")[1]
	flipAt(100)(t, path)
	r, err := filestore.VerifyWithKey(vfs.OS, dir, testEncryption(filestore.CipherChaCha))
	if err != nil {
		t.Fatal(err)
	}
	want := "DAMAGE: " + path + ": 1 corrupt records"
	for _, p := range r.Problems {
		if strings.HasPrefix(p.String(), want) && strings.Contains(p.What, "the first at offset 48") {
			return
		}
	}
	t.Fatalf("no %q ... at offset 48: %v", want, r.Problems)
}

// A damaged data key file cannot tell itself from one sealed with
// another key when its seal fails: that is ErrWrongKey; one that is no
// key file at all (cut short) is damage, and nothing under it is read.
func TestVerifyDamagedKeyFile(t *testing.T) {
	dir, _ := verifyFixtureWith(t, filestore.Config{Encryption: testEncryption(filestore.CipherAES)})
	key := filepath.Join(dir, "stream.key")
	flipAt(40)(t, key)
	if _, err := filestore.VerifyWithKey(vfs.OS, dir, testEncryption(filestore.CipherAES)); !errors.Is(err, filestore.ErrWrongKey) {
		t.Fatalf("flipped key file: %v, want ErrWrongKey", err)
	}
	truncateBy(3)(t, key)
	r, err := filestore.VerifyWithKey(vfs.OS, dir, testEncryption(filestore.CipherAES))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Damaged() || len(r.Problems) != 1 || r.Problems[0].File != key || !strings.Contains(r.Problems[0].What, "not a data key file") {
		t.Fatalf("truncated key file: %v", r.Problems)
	}
}

// An encrypted consumer log verifies with its key to the recorded state;
// a flipped byte is damage naming the frame's offset; a wrong key is
// ErrWrongKey and no key ErrEncryptedVerify.
func TestVerifyEncryptedConsumerLog(t *testing.T) {
	for _, c := range []filestore.Cipher{filestore.CipherChaCha, filestore.CipherAES} {
		t.Run(c.String(), func(t *testing.T) {
			write := func(t *testing.T) string {
				dir := t.TempDir()
				cs, err := filestore.OpenConsumerStoreConfig(vfs.OS, dir, filestore.ConsumerConfig{Encryption: testEncryption(c)})
				if err != nil {
					t.Fatal(err)
				}
				for i := uint64(1); i <= 20; i++ {
					st := &store.ConsumerState{
						Delivered: store.SequencePair{Consumer: i, Stream: i},
						AckFloor:  store.SequencePair{Consumer: i / 2, Stream: i / 2},
						Pending:   map[uint64]store.Pending{i: {Sequence: i, Timestamp: int64(i)}},
					}
					if err := cs.Update(st); err != nil {
						t.Fatal(err)
					}
				}
				if err := cs.Close(); err != nil {
					t.Fatal(err)
				}
				return dir
			}
			dir := write(t)
			r, err := filestore.VerifyConsumerWithKey(vfs.OS, dir, filestore.Encryption{Key: testKey})
			if err != nil {
				t.Fatal(err)
			}
			if r.Damaged() || len(r.Problems) != 0 || r.Cipher != c || r.State.Delivered.Stream != 20 || r.State.AckFloor.Stream != 10 || len(r.State.Pending) != 1 || r.Frames == 0 {
				t.Fatalf("clean log: %+v", r)
			}
			if _, err := filestore.VerifyConsumer(vfs.OS, dir); !errors.Is(err, filestore.ErrEncryptedVerify) {
				t.Fatalf("no key: %v", err)
			}
			if _, err := filestore.VerifyConsumerWithKey(vfs.OS, dir, filestore.Encryption{Key: otherKey}); !errors.Is(err, filestore.ErrWrongKey) {
				t.Fatalf("wrong key: %v", err)
			}
			dir = write(t)
			log := filepath.Join(dir, "consumer.log")
			flipAt(30)(t, log)
			r, err = filestore.VerifyConsumerWithKey(vfs.OS, dir, filestore.Encryption{Key: testKey})
			if err != nil {
				t.Fatal(err)
			}
			if !r.Damaged() || r.Problems[0].File != log || !strings.Contains(r.Problems[0].What, "at offset 0") {
				t.Fatalf("flipped log: %+v", r.Problems)
			}
		})
	}
}
