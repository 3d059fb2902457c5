package outbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/vfs"
)

// TestEncryptedOutbox captures readings into an outbox over an encrypted
// file stream while the hub is away: no outbox file holds a payload, a
// wrong key does not open the outbox, and with the right key the reopened
// outbox forwards every reading in order, decrypted, with the ids it was
// captured with. Both ciphers.
func TestEncryptedOutbox(t *testing.T) {
	const secret = "meter-reading-confidential"
	key := []byte("outbox test key, 32 bytes long..")
	for _, c := range []filestore.Cipher{filestore.CipherChaCha, filestore.CipherAES} {
		t.Run(c.String(), func(t *testing.T) {
			dir := t.TempDir()
			open := func(key []byte) (*filestore.Stream, error) {
				return filestore.Open(vfs.OS, dir, filestore.Config{
					Config: store.Config{Name: "up"}, BlockSize: 4096,
					Encryption: filestore.Encryption{Cipher: c, Key: key},
				})
			}
			s, err := open(key)
			require.NoError(t, err)
			ob := newOutbox(t, s, newFakeHub(false), Config{})
			for i := range 200 {
				require.NoError(t, ob.Capture(fmt.Sprintf("telemetry.%d", i), nil, fmt.Appendf(nil, "%s-%d", secret, i)))
			}
			first := ob.IDPrefix()
			require.NoError(t, ob.Close())
			require.NoError(t, s.Close())
			err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				b, err := os.ReadFile(path)
				if err == nil && (bytes.Contains(b, []byte(secret)) || bytes.Contains(b, []byte("telemetry."))) {
					t.Errorf("%s holds a payload or subject in plaintext", path)
				}
				return err
			})
			require.NoError(t, err)

			if _, err := open([]byte("not the outbox key, 32 bytes....")); !errors.Is(err, filestore.ErrWrongKey) {
				t.Fatalf("wrong key: %v", err)
			}
			s, err = open(key)
			require.NoError(t, err)
			defer s.Close()
			hub := newFakeHub(true)
			ob = newOutbox(t, s, hub, Config{})
			require.NoError(t, ob.Start(context.Background()))
			for i := range 200 {
				p := hub.next(t)
				want := fmt.Sprintf("NATS/1.0\r\nNats-Msg-Id: %s%d\r\n\r\n", first, i+1)
				if p.subject != fmt.Sprintf("telemetry.%d", i) || string(p.data) != fmt.Sprintf("%s-%d", secret, i) || string(p.hdr) != want {
					t.Fatalf("forwarded %q %q %q, want reading %d", p.subject, p.hdr, p.data, i)
				}
				ack(ob, p, "S")
			}
			waitStatus(t, ob, "empty outbox", func(st Status) bool { return st.BacklogMsgs == 0 })
		})
	}
}
