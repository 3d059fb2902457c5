package filestore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"path"
	"sort"
	"sync"
	"testing"

	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/vfs"
)

// fuzzImage is a small stream's files, built once: several sealed blocks
// (compressed or not) with index files, a removal and an erase, and the
// messages it holds.
type fuzzImage struct {
	files map[string][]byte
	names []string
	// all holds every message stored, msgs those not removed, seqs the
	// sequences of msgs in order.
	all  map[uint64]string
	msgs map[uint64]string
	seqs []uint64
}

var (
	fuzzImagesOnce sync.Once
	fuzzImages     [2]*fuzzImage
)

func buildFuzzImage(tb testing.TB, c Compression) *fuzzImage {
	mem := vfs.NewMem()
	cfg := Config{BlockSize: 400, Compression: c}
	s, err := Open(mem, "s", cfg)
	if err != nil {
		tb.Fatal(err)
	}
	img := &fuzzImage{files: make(map[string][]byte), all: make(map[uint64]string), msgs: make(map[uint64]string)}
	for i := range 30 {
		subj, data := fmt.Sprintf("s.%d", i%4), bytes.Repeat([]byte{byte('a' + i%26)}, i%40)
		seq, _, err := s.Store(subj, nil, data, 0)
		if err != nil {
			tb.Fatal(err)
		}
		img.msgs[seq] = subj + " " + string(data)
		img.all[seq] = img.msgs[seq]
	}
	for _, seq := range []uint64{4, 17} {
		if _, err := s.Remove(seq, seq == 17); err != nil {
			tb.Fatal(err)
		}
		delete(img.msgs, seq)
	}
	if err := s.Checkpoint(); err != nil {
		tb.Fatal(err)
	}
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	des, _ := mem.ReadDir("s")
	for _, de := range des {
		f, _ := mem.Open(path.Join("s", de.Name()))
		fi, _ := f.Stat()
		b := make([]byte, fi.Size())
		f.ReadAt(b, 0)
		f.Close()
		img.files[de.Name()] = b
		img.names = append(img.names, de.Name())
	}
	sort.Strings(img.names)
	for seq := range img.msgs {
		img.seqs = append(img.seqs, seq)
	}
	sort.Slice(img.seqs, func(i, j int) bool { return img.seqs[i] < img.seqs[j] })
	return img
}

// FuzzRecover damages a stream's files as the fuzzer's bytes say and opens
// it: Open never fails or panics, every message it serves is one that was
// stored, with its sequence, and unless recovery counted corruption (or a
// load reports it), what survives is a prefix of what was stored (a cut
// tail may also bring back a removed message whose tombstone it held).
// The stream stays usable afterwards.
//
// Input: byte 0 picks compression; then 4-byte groups (file, offset high,
// offset low, xor). A zero xor truncates the last block at that offset
// (a torn tail), otherwise the byte at that offset is xored.
func FuzzRecover(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte{1})
	f.Add([]byte{0, 0, 0, 60, 0x01})
	f.Add([]byte{1, 0, 0, 70, 0x80})
	f.Add([]byte{0, 255, 0, 200, 0})
	f.Add([]byte{1, 1, 0, 10, 0xff, 2, 0, 3, 0x10})
	f.Add([]byte{0, 3, 0, 30, 0x04, 255, 1, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		fuzzImagesOnce.Do(func() {
			fuzzImages[0] = buildFuzzImage(t, CompressionNone)
			fuzzImages[1] = buildFuzzImage(t, CompressionS2)
		})
		if len(in) == 0 {
			return
		}
		img := fuzzImages[in[0]&1]
		files := make(map[string][]byte, len(img.files))
		for name, b := range img.files {
			files[name] = append([]byte(nil), b...)
		}
		last := img.names[0]
		for _, n := range img.names {
			if path.Ext(n) == blockExt {
				last = n
			}
		}
		for in = in[1:]; len(in) >= 4; in = in[4:] {
			name := img.names[int(in[0])%len(img.names)]
			b := files[name]
			if len(b) == 0 {
				continue
			}
			off := int(binary.BigEndian.Uint16(in[1:])) % len(b)
			if in[3] == 0 {
				files[last] = files[last][:min(off, len(files[last]))]
				continue
			}
			b[off] ^= in[3]
		}
		mem := vfs.NewMem()
		mem.MkdirAll("s", 0o755)
		for name, b := range files {
			f, _ := mem.Create(path.Join("s", name))
			f.Write(b)
			f.Close()
		}
		cfg := Config{BlockSize: 400, Compression: Compression(img.files[last][5] & flagS2)}
		s, err := Open(mem, "s", cfg)
		if err != nil {
			t.Fatalf("Open on damaged files: %v", err)
		}
		defer s.Close()
		var present []uint64
		badLoads := 0
		for seq := uint64(0); seq <= 32; seq++ {
			m, err := s.Load(seq, nil)
			switch {
			case err == nil:
				if got := m.Subject + " " + string(m.Data); img.all[seq] != got || m.Seq != seq {
					t.Fatalf("Load(%d) = %q, stored %q", seq, got, img.all[seq])
				}
				if _, live := img.msgs[seq]; live {
					present = append(present, seq)
				}
			case errors.Is(err, store.ErrCorrupt):
				badLoads++
			case !errors.Is(err, store.ErrDeleted) && !errors.Is(err, store.ErrNotFound):
				t.Fatalf("Load(%d): %v", seq, err)
			}
		}
		r := s.Recovered()
		if !r.Lost() && badLoads == 0 {
			for i, seq := range present {
				if img.seqs[i] != seq {
					t.Fatalf("no corruption reported, but %v is not a prefix of %v (%v)", present, img.seqs, r)
				}
			}
		}
		seq, _, err := s.Store("after", nil, []byte("x"), 0)
		if err != nil || seq <= s.State().FirstSeq-1 {
			t.Fatalf("Store after recovery: %d, %v", seq, err)
		}
		if len(present) > 0 && seq <= present[len(present)-1] {
			t.Fatalf("Store after recovery reused sequence %d", seq)
		}
	})
}
