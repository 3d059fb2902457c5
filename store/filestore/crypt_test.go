package filestore_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/storetest"
	"github.com/leafbox/leafbox/store/vfs"
)

var ciphers = []filestore.Cipher{filestore.CipherChaCha, filestore.CipherAES}

// TestCryptStreamConformance runs the stream conformance suite and the
// model test on encrypted streams of both ciphers.
func TestCryptStreamConformance(t *testing.T) {
	for _, c := range ciphers {
		enc := testEncryption(c)
		t.Run(c.String()+"/sync/small", func(t *testing.T) {
			storetest.RunStreamTests(t, opener(filestore.Config{BlockSize: 512, Encryption: enc}, false))
		})
		t.Run(c.String()+"/async/small/nocache", func(t *testing.T) {
			storetest.RunStreamTests(t, opener(filestore.Config{BlockSize: 512, SyncInterval: time.Second, IndexCache: -1, Encryption: enc}, false))
		})
		t.Run(c.String()+"/model", func(t *testing.T) {
			for seed := int64(1); seed <= 2; seed++ {
				storetest.RunModelTest(t, opener(filestore.Config{BlockSize: 512, IndexCache: -1, Encryption: enc}, false), seed)
			}
		})
	}
}

// secretPayload and secretSubject must appear in no file of an encrypted
// store.
const (
	secretPayload = "PAYLOAD-7c1e-is-confidential"
	secretHeader  = "X-Secret-Header-9f3a"
	secretSubject = "plant.valve.secret17"
)

// TestEncryptedFilesHoldNoPlaintext stores known payloads, headers and
// subjects on a real directory, closes the stream (index files written)
// and greps every file of the directory for them.
func TestEncryptedFilesHoldNoPlaintext(t *testing.T) {
	for _, c := range ciphers {
		t.Run(c.String(), func(t *testing.T) {
			dir := t.TempDir()
			cfg := filestore.Config{BlockSize: 4096, Encryption: testEncryption(c)}
			s := mustOpen(t, vfs.OS, dir, cfg)
			hdr := []byte("NATS/1.0\r\n" + secretHeader + ": 1\r\n\r\n")
			for i := range 300 {
				if _, _, err := s.Store(secretSubject, hdr, fmt.Appendf(nil, "%s-%d", secretPayload, i), 0); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Checkpoint(); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			requireNoPlaintext(t, dir, ".blk", ".idx", "stream.key")
			// And it reads back.
			s = mustOpen(t, vfs.OS, dir, cfg)
			m, err := s.Load(300, nil)
			if err != nil || string(m.Data) != secretPayload+"-299" || m.Subject != secretSubject || string(m.Header) != string(hdr) {
				t.Fatalf("Load(300) = %+v, %v", m, err)
			}
		})
	}
}

// requireNoPlaintext fails if a file under dir contains a secret, and
// requires a file of each of the given suffixes to exist.
func requireNoPlaintext(t *testing.T, dir string, suffixes ...string) {
	t.Helper()
	seen := map[string]int{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, secret := range []string{secretPayload, secretHeader, secretSubject, "confidential", string(testKey)} {
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s holds %q in plaintext", path, secret)
			}
		}
		for _, suf := range suffixes {
			if strings.HasSuffix(path, suf) {
				seen[suf]++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, suf := range suffixes {
		if seen[suf] == 0 {
			t.Errorf("no %s file under %s", suf, dir)
		}
	}
}

// TestCryptWrongKeyRefused opens an encrypted stream with another key,
// with no key, and with the other cipher: each is a clear error at Open
// that names stream.key, and nothing in the directory changes.
func TestCryptWrongKeyRefused(t *testing.T) {
	mem := vfs.NewStrictMem()
	cfg := filestore.Config{Encryption: testEncryption(filestore.CipherChaCha)}
	s := mustOpen(t, mem, "s", cfg)
	var acked []storetest.AckedMsg
	for i := range 20 {
		acked, _ = storeAcked(s, i, acked)
	}
	s.Close()
	before := files(t, mem, "s")

	other := []byte("another key, 32 bytes long......")
	for _, tc := range []struct {
		name string
		enc  filestore.Encryption
		want error
		text string
	}{
		{"wrong key", filestore.Encryption{Cipher: filestore.CipherChaCha, Key: other}, filestore.ErrWrongKey, "the key does not open stream.key"},
		{"wrong previous key too", filestore.Encryption{Cipher: filestore.CipherChaCha, Key: other, PrevKey: other}, filestore.ErrWrongKey, "the key does not open stream.key"},
		{"no key", filestore.Encryption{}, filestore.ErrNoKey, "stream.key"},
		{"other cipher", filestore.Encryption{Cipher: filestore.CipherAES, Key: testKey}, store.ErrInvalidConfig, "encrypted with chachapoly"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := filestore.Open(mem, "s", filestore.Config{Encryption: tc.enc})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("Open: %v, want %v mentioning %q", err, tc.want, tc.text)
			}
			for _, k := range [][]byte{testKey, other} {
				if strings.Contains(err.Error(), string(k)) {
					t.Fatalf("the error shows a key: %v", err)
				}
			}
			if after := files(t, mem, "s"); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Fatalf("files changed: %v, were %v", after, before)
			}
		})
	}
	// The right key still opens it, with everything.
	s = mustOpen(t, mem, "s", cfg)
	storetest.CheckPrefix(t, acked, s)
}

// TestCryptKeyChange changes the server key with PrevKey: only stream.key
// is rewritten, and afterwards the new key alone opens the stream.
func TestCryptKeyChange(t *testing.T) {
	mem := vfs.NewStrictMem()
	cfg := filestore.Config{BlockSize: 512, Encryption: testEncryption(filestore.CipherAES)}
	s := mustOpen(t, mem, "s", cfg)
	var acked []storetest.AckedMsg
	for i := range 40 {
		acked, _ = storeAcked(s, i, acked)
	}
	s.Close()
	blocks := map[string][]byte{}
	for _, n := range names(t, mem, "s", ".blk") {
		blocks[n] = readAll(t, mem, "s/"+n)
	}
	newKey := []byte("the new server key, rotated.....")
	rotated := cfg
	rotated.Encryption = filestore.Encryption{Cipher: filestore.CipherAES, Key: newKey, PrevKey: testKey}
	s = mustOpen(t, mem, "s", rotated)
	storetest.CheckPrefix(t, acked, s)
	s.Close()
	for n, b := range blocks {
		if !bytes.Equal(readAll(t, mem, "s/"+n), b) {
			t.Errorf("block %s was rewritten by a key change", n)
		}
	}
	cfg.Encryption = filestore.Encryption{Cipher: filestore.CipherAES, Key: newKey}
	s = mustOpen(t, mem, "s", cfg)
	storetest.CheckPrefix(t, acked, s)
	s.Close()
	if _, err := filestore.Open(mem, "s", filestore.Config{Encryption: testEncryption(filestore.CipherAES)}); !errors.Is(err, filestore.ErrWrongKey) {
		t.Fatalf("the old key still opens the stream: %v", err)
	}
}

// TestCryptForgedRecordDetected rewrites a sealed record's ciphertext and
// recomputes its crc32c, which only authentication can catch: with the
// index file the damaged message fails to load with ErrCorrupt; without
// it, Open counts it as corrupt and drops it; the others are intact. A
// record moved to another sequence fails the same way.
func TestCryptForgedRecordDetected(t *testing.T) {
	for _, c := range ciphers {
		for _, forge := range []string{"ciphertext", "sequence"} {
			for _, keepIndex := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s/%s/index=%v", c, forge, keepIndex), func(t *testing.T) {
					testForgedRecord(t, c, forge, keepIndex)
				})
			}
		}
	}
}

func testForgedRecord(t *testing.T, c filestore.Cipher, forge string, keepIndex bool) {
	mem := vfs.NewStrictMem()
	cfg := filestore.Config{BlockSize: 1 << 20, Encryption: testEncryption(c)}
	s := mustOpen(t, mem, "s", cfg)
	var acked []storetest.AckedMsg
	for i := range 9 {
		acked, _ = storeAcked(s, i, acked)
	}
	if err := s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	blk := "s/" + names(t, mem, "s", ".blk")[0]
	full := readAll(t, mem, blk)
	start := 48
	for _, a := range acked[:4] {
		start += recordLen(a) + 28
	}
	end := start + recordLen(acked[4]) + 28
	rec := full[start:end]
	switch forge {
	case "ciphertext":
		rec[40+12+2] ^= 0x20
	case "sequence":
		// Claim sequence 5 is 50, with a good header checksum.
		binary.LittleEndian.PutUint64(rec[12:], 50)
		binary.LittleEndian.PutUint32(rec[36:], crc32.Checksum(rec[:36], crc32.MakeTable(crc32.Castagnoli)))
	}
	binary.LittleEndian.PutUint32(rec[len(rec)-4:], crc32.Checksum(rec[:len(rec)-4], crc32.MakeTable(crc32.Castagnoli)))
	writeAll(t, mem, blk, full)
	if !keepIndex {
		_ = mem.Remove(blk[:len(blk)-4] + ".idx")
	}
	s = mustOpen(t, mem, "s", cfg)
	rest := append(append([]storetest.AckedMsg(nil), acked[:4]...), acked[5:]...)
	if keepIndex && forge == "ciphertext" {
		if _, err := s.Load(5, nil); !errors.Is(err, store.ErrCorrupt) {
			t.Fatalf("Load(5) of a forged record = %v, want ErrCorrupt", err)
		}
		for _, a := range rest {
			if m, err := s.Load(a.Seq, nil); err != nil || string(m.Data) != string(a.Data) {
				t.Fatalf("Load(%d) = %v, %v", a.Seq, m, err)
			}
		}
		return
	}
	if keepIndex {
		// The index still places 5 there; the record now says 50.
		if _, err := s.Load(5, nil); !errors.Is(err, store.ErrCorrupt) {
			t.Fatalf("Load(5) of a moved record = %v, want ErrCorrupt", err)
		}
		return
	}
	if r := s.Recovered(); r.CorruptRecords != 1 {
		t.Fatalf("report %v, want one corrupt record", r)
	}
	storetest.CheckPrefix(t, rest, s)
	if _, err := s.Load(50, nil); err == nil {
		t.Fatal("the moved record loads as 50")
	}
}

// TestEncryptConvertsPlaintextStream turns encryption on for a plaintext
// stream with sealed blocks, deletions, an erased message and a TTL: every
// message is kept, the files are sealed, and a second Open converts
// nothing.
func TestEncryptConvertsPlaintextStream(t *testing.T) {
	for _, c := range ciphers {
		t.Run(c.String(), func(t *testing.T) {
			dir := t.TempDir()
			plain := filestore.Config{BlockSize: 512, Config: store.Config{AllowMsgTTL: true}}
			s := mustOpen(t, vfs.OS, dir, plain)
			for i := range 120 {
				if _, _, err := s.Store(fmt.Sprintf("%s.%d", secretSubject, i%3), nil, fmt.Appendf(nil, "%s-%d", secretPayload, i), 0); err != nil {
					t.Fatal(err)
				}
			}
			if _, _, err := s.Store("ttl."+secretSubject, nil, []byte(secretPayload), int64(time.Hour)); err != nil {
				t.Fatal(err)
			}
			for _, seq := range []uint64{3, 50, 51, 52} {
				if _, err := s.Remove(seq, false); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Remove(60, true); err != nil {
				t.Fatal(err)
			}
			if err := s.Checkpoint(); err != nil {
				t.Fatal(err)
			}
			want := takeDump(t, s)
			s.Close()

			enc := plain
			enc.Encryption = testEncryption(c)
			s = mustOpen(t, vfs.OS, dir, enc)
			if r := s.Recovered(); r.ConvertedBlocks == 0 || r.Lost() {
				t.Fatalf("report %v: want converted blocks and no loss", r)
			}
			requireSameContent(t, takeDump(t, s), want)
			if _, _, err := s.Store("after", nil, []byte("x"), 0); err != nil {
				t.Fatal(err)
			}
			s.Close()
			requireNoPlaintext(t, dir, ".blk", "stream.key")
			s = mustOpen(t, vfs.OS, dir, enc)
			if r := s.Recovered(); r.ConvertedBlocks != 0 || r.Lost() {
				t.Fatalf("second open: report %v", r)
			}
			if m, err := s.Load(want.state.LastSeq+1, nil); err != nil || string(m.Data) != "x" {
				t.Fatalf("Load after conversion: %v, %v", m, err)
			}
		})
	}
}

// TestEncryptConversionPowerCut cuts the power at every mutating file
// operation of the Open that converts a plaintext stream: the next Open
// with the key always finds every message.
func TestEncryptConversionPowerCut(t *testing.T) {
	plain := filestore.Config{BlockSize: 400}
	enc := plain
	enc.Encryption = testEncryption(filestore.CipherChaCha)
	for k := 0; ; k++ {
		mem := vfs.NewStrictMem()
		s, err := filestore.Open(mem, "s", plain)
		if err != nil {
			t.Fatal(err)
		}
		var acked []storetest.AckedMsg
		for i := range 30 {
			acked, _ = storeAcked(s, i, acked)
		}
		s.Close()
		trig := vfs.NewTrigger(int64(k), errPowerCut)
		if s, err := filestore.Open(vfs.Inject(mem, trig.Fail), "s", enc); err == nil {
			storetest.CheckPrefix(t, acked, s)
			s.Close()
		}
		mem.ResetToSyncedState()
		s, err = filestore.Open(mem, "s", enc)
		if err != nil {
			t.Fatalf("k=%d: Open after a cut conversion: %v\n%s", k, err, mem)
		}
		storetest.CheckPrefix(t, acked, s)
		if got := s.State().Msgs; got != uint64(len(acked)) {
			t.Fatalf("k=%d: %d messages, want %d", k, got, len(acked))
		}
		s.Close()
		if t.Failed() || !trig.Fired() {
			t.Logf("%d crash points", k)
			return
		}
	}
}

// TestCryptConfigValidate checks the settings Validate refuses.
func TestCryptConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  filestore.Config
		ok   bool
	}{
		{"chacha", filestore.Config{Encryption: testEncryption(filestore.CipherChaCha)}, true},
		{"short key", filestore.Config{Encryption: filestore.Encryption{Cipher: filestore.CipherAES, Key: []byte("short")}}, false},
		{"key without cipher", filestore.Config{Encryption: filestore.Encryption{Key: testKey}}, false},
		{"unknown cipher", filestore.Config{Encryption: filestore.Encryption{Cipher: 9, Key: testKey}}, false},
		{"with s2", filestore.Config{Compression: filestore.CompressionS2, Encryption: testEncryption(filestore.CipherAES)}, false},
	} {
		err := tc.cfg.Validate()
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, store.ErrInvalidConfig)) {
			t.Errorf("%s: Validate = %v", tc.name, err)
		}
		if err != nil && strings.Contains(err.Error(), string(testKey)) {
			t.Errorf("%s: error shows the key: %v", tc.name, err)
		}
	}
	if s := (filestore.Config{Encryption: testEncryption(filestore.CipherAES)}).String(); strings.Contains(s, string(testKey)) || !strings.Contains(s, "cipher=aes") {
		t.Errorf("String() = %q", s)
	}
	for in, want := range map[string]filestore.Cipher{"chachapoly": filestore.CipherChaCha, "aes": filestore.CipherAES, "": filestore.CipherNone, "none": filestore.CipherNone} {
		if got, err := filestore.ParseCipher(in); err != nil || got != want {
			t.Errorf("ParseCipher(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := filestore.ParseCipher("rot13"); !errors.Is(err, store.ErrInvalidConfig) {
		t.Errorf("ParseCipher(rot13) = %v", err)
	}
}

// TestCryptConsumerStore runs the consumer store conformance suite on
// sealed logs, checks the log holds no plaintext state, that a wrong key
// is refused and that a plaintext log is converted with its state.
func TestCryptConsumerStore(t *testing.T) {
	for _, c := range ciphers {
		enc := testEncryption(c)
		t.Run(c.String()+"/conformance", func(t *testing.T) {
			storetest.RunConsumerStoreTests(t, func(t *testing.T) store.ConsumerStore {
				cs, err := filestore.OpenConsumerStoreConfig(vfs.NewStrictMem(), "consumer", filestore.ConsumerConfig{Encryption: enc, CompactSize: 256})
				if err != nil {
					t.Fatalf("OpenConsumerStore: %v", err)
				}
				t.Cleanup(func() { cs.Close() })
				return cs
			})
		})
		t.Run(c.String()+"/convert", func(t *testing.T) {
			dir := t.TempDir()
			cs, err := filestore.OpenConsumerStore(vfs.OS, dir)
			if err != nil {
				t.Fatal(err)
			}
			// A recognisable pending sequence: its uvarint bytes must not
			// survive in the sealed log.
			const marker = 0x0123456789abcdef
			st := &store.ConsumerState{
				Delivered: store.SequencePair{Consumer: 9, Stream: marker},
				AckFloor:  store.SequencePair{Consumer: 2, Stream: 3},
				Pending:   map[uint64]store.Pending{marker: {Sequence: 7, Timestamp: 1}},
			}
			if err := cs.Update(st); err != nil {
				t.Fatal(err)
			}
			cs.Close()
			plainLog, _ := os.ReadFile(filepath.Join(dir, "consumer.log"))
			mark := binary.AppendUvarint(nil, marker)
			if !bytes.Contains(plainLog, mark) {
				t.Fatal("the plaintext log does not hold the marker: the test proves nothing")
			}
			cfg := filestore.ConsumerConfig{Encryption: enc}
			cs, err = filestore.OpenConsumerStoreConfig(vfs.OS, dir, cfg)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := cs.State()
			if got.Delivered != st.Delivered || got.AckFloor != st.AckFloor || got.Pending[marker] != st.Pending[marker] {
				t.Fatalf("converted state %+v, want %+v", got, st)
			}
			st.AckFloor = store.SequencePair{Consumer: 4, Stream: 5}
			if err := cs.Update(st); err != nil {
				t.Fatal(err)
			}
			cs.Close()
			sealedLog, _ := os.ReadFile(filepath.Join(dir, "consumer.log"))
			if bytes.Contains(sealedLog, mark) {
				t.Fatal("the sealed log holds the marker")
			}
			cs, err = filestore.OpenConsumerStoreConfig(vfs.OS, dir, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := cs.State(); got.AckFloor != st.AckFloor || cs.Recovered().TruncatedBytes != 0 {
				t.Fatalf("reopened state %+v, report %+v", got, cs.Recovered())
			}
			cs.Close()
			wrong := filestore.ConsumerConfig{Encryption: filestore.Encryption{Cipher: c, Key: []byte("another key, 32 bytes long......")}}
			if _, err := filestore.OpenConsumerStoreConfig(vfs.OS, dir, wrong); !errors.Is(err, filestore.ErrWrongKey) || !strings.Contains(err.Error(), "consumer.key") {
				t.Fatalf("wrong key: %v", err)
			}
			if _, err := filestore.OpenConsumerStore(vfs.OS, dir); !errors.Is(err, filestore.ErrNoKey) {
				t.Fatalf("no key: %v", err)
			}
		})
	}
}

// BenchmarkCryptStoreLoad stores 128-byte messages with a one-second sync
// interval, then loads them in order, plaintext and with each cipher: the
// cost of sealing and opening.
func BenchmarkCryptStoreLoad(b *testing.B) {
	for _, c := range []filestore.Cipher{filestore.CipherNone, filestore.CipherChaCha, filestore.CipherAES} {
		cfg := filestore.Config{SyncInterval: time.Second}
		if c != filestore.CipherNone {
			cfg.Encryption = testEncryption(c)
		}
		b.Run("store/"+c.String(), func(b *testing.B) {
			s, err := filestore.Open(vfs.OS, b.TempDir(), cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			b.SetBytes(int64(len(benchPayload)))
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				if _, _, err := s.Store("sensors.temp", nil, benchPayload, 0); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
		})
		b.Run("load/"+c.String(), func(b *testing.B) {
			s, err := filestore.Open(vfs.OS, b.TempDir(), cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			const n = 100_000
			for range n {
				if _, _, err := s.Store("sensors.temp", nil, benchPayload, 0); err != nil {
					b.Fatal(err)
				}
			}
			if err := s.Sync(); err != nil {
				b.Fatal(err)
			}
			var sm store.Msg
			sm.Buf = make([]byte, 0, 256)
			b.SetBytes(int64(len(benchPayload)))
			b.ReportAllocs()
			start := time.Now()
			for i := 0; b.Loop(); i++ {
				if _, err := s.Load(uint64(i%n)+1, &sm); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
		})
	}
}

// TestCryptLostKeyFileRefused removes stream.key (consumer.key) from an
// encrypted directory: Open refuses it instead of keying it anew and
// dropping every sealed record as corrupt, and leaves nothing changed, so
// restoring the file brings everything back.
func TestCryptLostKeyFileRefused(t *testing.T) {
	mem := vfs.NewStrictMem()
	cfg := filestore.Config{BlockSize: 512, Encryption: testEncryption(filestore.CipherChaCha)}
	s := mustOpen(t, mem, "s", cfg)
	var acked []storetest.AckedMsg
	for i := range 30 {
		acked, _ = storeAcked(s, i, acked)
	}
	s.Close()
	key := readAll(t, mem, "s/stream.key")
	require.NoError(t, mem.Remove("s/stream.key"))
	before := files(t, mem, "s")
	if _, err := filestore.Open(mem, "s", cfg); !errors.Is(err, filestore.ErrNoKey) || !strings.Contains(err.Error(), "data key file is missing") {
		t.Fatalf("Open without stream.key: %v", err)
	}
	if after := files(t, mem, "s"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("files changed: %v, were %v", after, before)
	}
	writeAll(t, mem, "s/stream.key", key)
	s = mustOpen(t, mem, "s", cfg)
	storetest.CheckPrefix(t, acked, s)

	ccfg := filestore.ConsumerConfig{Encryption: cfg.Encryption}
	cs, err := filestore.OpenConsumerStoreConfig(mem, "c", ccfg)
	require.NoError(t, err)
	st := &store.ConsumerState{Delivered: store.SequencePair{Consumer: 3, Stream: 3}, AckFloor: store.SequencePair{Consumer: 1, Stream: 1}}
	require.NoError(t, cs.Update(st))
	cs.Close()
	ckey := readAll(t, mem, "c/consumer.key")
	require.NoError(t, mem.Remove("c/consumer.key"))
	if _, err := filestore.OpenConsumerStoreConfig(mem, "c", ccfg); !errors.Is(err, filestore.ErrNoKey) {
		t.Fatalf("OpenConsumerStore without consumer.key: %v", err)
	}
	if _, err := mem.Stat("c/consumer.key"); err == nil {
		t.Fatal("a new consumer.key was left behind")
	}
	writeAll(t, mem, "c/consumer.key", ckey)
	cs, err = filestore.OpenConsumerStoreConfig(mem, "c", ccfg)
	require.NoError(t, err)
	defer cs.Close()
	if got, _ := cs.State(); got.AckFloor != st.AckFloor || got.Delivered != st.Delivered {
		t.Fatalf("state %+v, want %+v", got, st)
	}
}

// TestVerifyRefusesEncrypted checks that the offline verifier names an
// encrypted stream as one it cannot check, instead of reporting its
// sealed records and index files as damage.
func TestVerifyRefusesEncrypted(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, vfs.OS, dir, filestore.Config{Encryption: testEncryption(filestore.CipherChaCha)})
	if _, _, err := s.Store("a", nil, []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if r, err := filestore.Verify(vfs.OS, dir); !errors.Is(err, filestore.ErrEncryptedVerify) {
		t.Fatalf("Verify of an encrypted stream: %+v, %v; want ErrEncryptedVerify", r, err)
	}
}
