package jetstream

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/s2"

	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/vfs"
)

// readBackupDir returns the tar entries (name → content) of the archive
// in a `nats stream backup` directory, and every file's raw bytes.
func readBackupDir(t *testing.T, dir string) (entries map[string][]byte, raw [][]byte) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	entries = map[string][]byte{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		raw = append(raw, b)
		if !strings.HasSuffix(e.Name(), ".s2") {
			continue
		}
		tr := tar.NewReader(s2.NewReader(bytes.NewReader(b)))
		for {
			hdr, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", e.Name(), err)
			}
			body, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			entries[hdr.Name] = body
		}
	}
	if len(entries) == 0 {
		t.Fatalf("no archive in %s", dir)
	}
	return entries, raw
}

// A `nats stream backup` of a stream that leafbox encrypts at rest is a
// plaintext archive of the messages (as nats-server's are): no server
// key, no data key file, nothing sealed. It restores with `nats stream
// restore` onto a leafbox with another server key, sealed there under a
// data key of its own, and onto a plaintext leafbox, with every message
// at its sequence with its headers and the consumer's state, also after
// a restart.
func TestSnapshotNATSCLIEncryptedBackupRestore(t *testing.T) {
	for _, c := range []filestore.Cipher{filestore.CipherChaCha, filestore.CipherAES} {
		t.Run(c.String(), func(t *testing.T) {
			srcKey := []byte("source gateway key 0123456789abcdef")
			src := newTestEnv(t, Config{Encryption: filestore.Encryption{Cipher: c, Key: srcKey}})
			fillStream(t, src.js, "ORDERS")
			if _, err := os.Stat(filepath.Join(src.cfg.StoreDir, "ORDERS", "msgs", "stream.key")); err != nil {
				t.Fatalf("the source stream is not encrypted: %v", err)
			}
			backup := filepath.Join(t.TempDir(), "backup")
			if out, err := runNATS(t, src.srv.ClientURL(), "stream", "backup", "ORDERS", backup, "--no-progress"); err != nil {
				t.Fatalf("backup: %v\n%s", err, out)
			}

			entries, raw := readBackupDir(t, backup)
			for name, body := range entries {
				if strings.HasSuffix(name, ".key") || bytes.Contains(body, []byte("LFKY")) || bytes.Contains(body, []byte("LFSE")) {
					t.Fatalf("the archive holds a key file or sealed file: %s", name)
				}
				if bytes.Contains(body, srcKey) {
					t.Fatalf("the archive entry %s holds the server key", name)
				}
			}
			for _, b := range raw {
				if bytes.Contains(b, srcKey) {
					t.Fatal("a backup file holds the server key")
				}
			}
			var plain bool
			for name, body := range entries {
				if strings.HasPrefix(name, dirMsgs) && bytes.Contains(body, []byte("X-N: 38")) {
					plain = true
				}
			}
			if !plain {
				t.Fatalf("the archive's messages are not in plaintext (entries %v)", keysOf(entries))
			}

			dstKey := []byte("replacement gateway key 0123456789ab")
			sealed := newTestEnv(t, Config{Encryption: filestore.Encryption{Cipher: c, Key: dstKey}})
			plainDst := newTestEnv(t, Config{})
			for _, dst := range []*testEnv{sealed, plainDst} {
				if out, err := runNATS(t, dst.srv.ClientURL(), "stream", "restore", backup, "--no-progress"); err != nil {
					t.Fatalf("restore: %v\n%s", err, out)
				}
				sameStreams(t, src.js, dst.js, "ORDERS")
				dst.restart()
				_, js := dst.newClient()
				sameStreams(t, src.js, js, "ORDERS")
			}

			// The encrypted replacement sealed the stream and the consumer
			// under its own key: its key opens them, the source's does not.
			msgs := filepath.Join(sealed.cfg.StoreDir, "ORDERS", "msgs")
			obs := filepath.Join(sealed.cfg.StoreDir, "ORDERS", "obs", "worker")
			if sealed.eng.Close() != nil {
				t.Fatal("close")
			}
			r, err := filestore.VerifyWithKey(vfs.OS, msgs, filestore.Encryption{Key: dstKey})
			if err != nil || r.Damaged() || r.Cipher != c || r.Msgs != 34 {
				t.Fatalf("verify of the restored stream with the new key: %+v %v", r, err)
			}
			cr, err := filestore.VerifyConsumerWithKey(vfs.OS, obs, filestore.Encryption{Key: dstKey})
			if err != nil || cr.Damaged() || cr.Cipher != c || cr.State.AckFloor.Stream == 0 {
				t.Fatalf("verify of the restored consumer with the new key: %+v %v", cr, err)
			}
			if _, err := filestore.VerifyWithKey(vfs.OS, msgs, filestore.Encryption{Key: srcKey}); !errors.Is(err, filestore.ErrWrongKey) {
				t.Fatalf("the source's key on the restored stream: %v, want ErrWrongKey", err)
			}
			sealed.startEngine()
			// The plaintext replacement holds it in plaintext.
			pmsgs := filepath.Join(plainDst.cfg.StoreDir, "ORDERS", "msgs")
			if _, err := os.Stat(filepath.Join(pmsgs, "stream.key")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the plaintext restore has a stream.key: %v", err)
			}
		})
	}
}

func keysOf(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
