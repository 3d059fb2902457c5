package filestore

import (
	"bytes"
	"errors"
	"testing"

	"github.com/leafbox/leafbox/store"
)

func testSealer(t testing.TB, c Cipher) *sealer {
	t.Helper()
	k, err := newSealer(c, bytes.Repeat([]byte{7}, dataKeyLen))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestCryptRecordRoundTrip seals a record, parses and opens it, and
// checks the length accounting and that nonces never repeat.
func TestCryptRecordRoundTrip(t *testing.T) {
	for _, c := range []Cipher{CipherChaCha, CipherAES} {
		k := testSealer(t, c)
		hdr, data := []byte("NATS/1.0\r\n\r\n"), bytes.Repeat([]byte("x"), 1000)
		b := appendSealedRecord([]byte("prefix"), k, 42, -5, 77, "a.b.c", hdr, data)[6:]
		if len(b) != recordLen("a.b.c", hdr, data)+sealOverhead {
			t.Fatalf("%s: length %d", c, len(b))
		}
		if bytes.Contains(b, data[:16]) || bytes.Contains(b, []byte("a.b.c")) {
			t.Fatalf("%s: plaintext in the sealed record", c)
		}
		r, n, err := parseRecord(b)
		if err != nil || n != len(b) || r.kind != kindSealed || r.seq != 42 || r.subject != nil {
			t.Fatalf("%s: parseRecord = %+v, %d, %v", c, r, n, err)
		}
		if _, err := k.openRecord(nil, b, &r); err != nil {
			t.Fatal(err)
		}
		if string(r.subject) != "a.b.c" || !bytes.Equal(r.header, hdr) || !bytes.Equal(r.data, data) || r.ttl != 77 || r.ts != -5 {
			t.Fatalf("%s: opened %+v", c, r)
		}
		e := entry{length: uint32(n), flags: entrySealed}
		if e.size() != store.Size("a.b.c", hdr, data) {
			t.Fatalf("%s: entry size %d, want %d", c, e.size(), store.Size("a.b.c", hdr, data))
		}
		// Another sealer of the same key opens it; a different key does not.
		r, _, _ = parseRecord(b)
		other, _ := newSealer(c, bytes.Repeat([]byte{8}, dataKeyLen))
		if _, err := other.openRecord(nil, b, &r); !errors.Is(err, store.ErrCorrupt) {
			t.Fatalf("%s: another key opens the record: %v", c, err)
		}
		seen := map[string]bool{}
		for range 1000 {
			nonce := string(k.appendNonce(nil))
			if seen[nonce] {
				t.Fatalf("%s: nonce repeated", c)
			}
			seen[nonce] = true
		}
	}
}

// TestCryptNonceCounterWraps checks that the counter's wrap draws a new
// prefix instead of repeating the first nonce.
func TestCryptNonceCounterWraps(t *testing.T) {
	k := testSealer(t, CipherChaCha)
	first := string(k.appendNonce(nil))
	k.counter = 0xFFFFFFFF - 1
	k.appendNonce(nil)
	after := k.appendNonce(nil)
	if string(after) == first || string(after[:8]) == first[:8] {
		t.Fatal("the nonce prefix did not change when the counter wrapped")
	}
}

// FuzzCryptScan feeds arbitrary bytes to the parsers that read sealed
// data: a block body scanned with a sealer, a data key file, a sealed
// file. None may panic; a scan never hands out a record that did not
// authenticate.
func FuzzCryptScan(f *testing.F) {
	k := testSealer(f, CipherChaCha)
	f.Add(appendSealedRecord(nil, k, 1, 2, 0, "a.b", nil, []byte("hello")))
	f.Add(append(appendSealedRecord(nil, k, 1, 2, 0, "a", nil, []byte("x")), appendTombstone(nil, 1, 1)...))
	kf, _ := sealKeyFile(keyFile{cipher: CipherChaCha, dataKey: bytes.Repeat([]byte{7}, dataKeyLen)}, []byte("0123456789abcdef"))
	f.Add(kf)
	f.Add(k.sealFile([]byte("index"), indexLabel(1)))
	f.Fuzz(func(t *testing.T, b []byte) {
		scanOpen(b, k, func(off int, r *record) {
			if r.kind == kindSealed || r.sealed != nil {
				t.Fatal("a sealed record reached fn unopened")
			}
		})
		_, _ = openKeyFile(b, []byte("0123456789abcdef"))
		_, _ = k.openFile(b, indexLabel(1))
	})
}
