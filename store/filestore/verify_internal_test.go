package filestore

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/leafbox/leafbox/store/vfs"
)

var verifyTestKey = []byte("verify test key 0123456789abcdef")

// writeVerifyStream writes a small stream in dir with enc and closes it.
func writeVerifyStream(t *testing.T, dir string, enc Encryption) {
	t.Helper()
	s, err := Open(vfs.OS, dir, Config{Encryption: enc})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, _, err := s.Store("dev.a", nil, bytes.Repeat([]byte{byte(i)}, 50), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// A sealed record whose ciphertext was changed and its crc32c computed
// again (tampering, not bit rot) fails authentication: Verify reports it
// as damage at its offset, with the reason.
func TestVerifyTamperedSealedRecord(t *testing.T) {
	for _, c := range []Cipher{CipherChaCha, CipherAES} {
		dir := t.TempDir()
		enc := Encryption{Cipher: c, Key: verifyTestKey}
		writeVerifyStream(t, dir, enc)
		name := blockName(dir, 1)
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		rec := b[blockHeaderLen:]
		r, n, err := parseRecord(rec)
		if err != nil || r.kind != kindSealed {
			t.Fatalf("%s: first record %+v: %v", c, r, err)
		}
		second := blockHeaderLen + n
		rec = b[second:]
		_, n, err = parseRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		rec[recordHeaderLen+nonceLen+3] ^= 0x01
		binary.LittleEndian.PutUint32(rec[n-4:], crc32.Checksum(rec[:n-4], crcTable))
		if _, _, err := parseRecord(rec); err != nil {
			t.Fatalf("%s: the tampered record no longer parses: %v", c, err)
		}
		if err := os.WriteFile(name, b, 0o600); err != nil {
			t.Fatal(err)
		}
		rep, err := VerifyWithKey(vfs.OS, dir, enc)
		if err != nil {
			t.Fatal(err)
		}
		var what string
		for _, p := range rep.Problems {
			if p.Damage && p.File == name {
				what = p.What
			}
		}
		if !strings.Contains(what, "fail authentication") || !strings.Contains(what, "the first at offset "+strconv.Itoa(second)) {
			t.Fatalf("%s: problems %v, want an authentication failure at offset %d", c, rep.Problems, second)
		}
		if rep.Msgs != 4 {
			t.Fatalf("%s: %d messages counted, want the 4 intact ones", c, rep.Msgs)
		}
	}
}

// A stream whose conversion to encrypted was cut short (key file marked
// converting, blocks still plaintext) verifies without damage: Open
// seals them, and a warning says so.
func TestVerifyUnfinishedConversion(t *testing.T) {
	dir := t.TempDir()
	writeVerifyStream(t, dir, Encryption{})
	kf := keyFile{cipher: CipherChaCha, converting: true, dataKey: bytes.Repeat([]byte{3}, dataKeyLen)}
	if err := writeKeyFile(vfs.OS, filepath.Join(dir, streamKeyName), kf, verifyTestKey); err != nil {
		t.Fatal(err)
	}
	rep, err := VerifyWithKey(vfs.OS, dir, Encryption{Key: verifyTestKey})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Damaged() || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].What, "being turned on") || rep.Msgs != 5 {
		t.Fatalf("report %+v", rep)
	}
}
