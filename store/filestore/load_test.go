package filestore_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/vfs"
)

// fillForLoad stores n test messages in a stream with small blocks, sealed
// and compressed as compression says, and returns it synced.
func fillForLoad(t testing.TB, c filestore.Compression, n int) *filestore.Stream {
	t.Helper()
	s := mustOpen(t, vfs.OS, t.TempDir(), filestore.Config{BlockSize: 64 << 10, SyncInterval: time.Hour, Compression: c})
	for i := range n {
		subj, hdr, data := testMsg(i)
		if _, _, err := s.Store(subj, hdr, data, 0); err != nil {
			t.Fatal(err)
		}
	}
	require.NoError(t, s.Checkpoint())
	return s
}

// TestLoadLentBufferAllocatesNothing is the load path's allocation budget:
// Load and LoadNext into a Msg whose Buf the caller lent allocate nothing
// per message, from sealed, compressed and active blocks alike.
func TestLoadLentBufferAllocatesNothing(t *testing.T) {
	for _, c := range []filestore.Compression{filestore.CompressionNone, filestore.CompressionS2} {
		t.Run(c.String(), func(t *testing.T) {
			const n = 3000
			s := fillForLoad(t, c, n)
			for i := n; i < n+50; i++ { // some in the active block's buffer
				subj, hdr, data := testMsg(i)
				_, _, err := s.Store(subj, hdr, data, 0)
				require.NoError(t, err)
			}
			sm := store.Msg{Buf: make([]byte, 0, 512)}
			seq := uint64(1)
			allocs := testing.AllocsPerRun(2000, func() {
				m, err := s.LoadNext("", seq, &sm)
				if err != nil {
					t.Fatal(err)
				}
				seq = m.Seq%(n+50) + 1
			})
			require.Equal(t, 0.0, allocs)
			allocs = testing.AllocsPerRun(500, func() {
				if _, err := s.Load(seq, &sm); err != nil {
					t.Fatal(err)
				}
				seq = seq%(n+50) + 1
			})
			require.Equal(t, 0.0, allocs)
			allocs = testing.AllocsPerRun(500, func() {
				if _, err := s.LoadNext("dev.3.temp", seq, &sm); err != nil {
					seq = 1
				} else {
					seq += 5
				}
			})
			require.Equal(t, 0.0, allocs)
		})
	}
}

// TestLoadIntoLentBuffer checks what a lent Buf gives: the right bytes,
// Header and Data that do not overlap or grow into each other, a larger
// buffer kept in Buf when the message outgrows it, and fresh bytes for
// every load when Buf is nil.
func TestLoadIntoLentBuffer(t *testing.T) {
	s := mustOpen(t, vfs.OS, t.TempDir(), filestore.Config{BlockSize: 4096})
	big := bytes.Repeat([]byte("x"), 3000)
	_, _, err := s.Store("a", []byte("NATS/1.0\r\nK: v\r\n\r\n"), []byte("small"), 0)
	require.NoError(t, err)
	_, _, err = s.Store("b", nil, big, 0)
	require.NoError(t, err)

	sm := store.Msg{Buf: make([]byte, 0, 8)}
	m, err := s.Load(1, &sm)
	require.NoError(t, err)
	require.Equal(t, "small", string(m.Data))
	require.Equal(t, "NATS/1.0\r\nK: v\r\n\r\n", string(m.Header))
	require.Equal(t, len(m.Data), cap(m.Data))
	require.Equal(t, len(m.Header), cap(m.Header))
	if cap(sm.Buf) < len(m.Data)+len(m.Header) {
		t.Fatalf("Buf kept %d bytes of capacity, want the grown buffer", cap(sm.Buf))
	}
	m, err = s.Load(2, &sm)
	require.NoError(t, err)
	require.Equal(t, string(big), string(m.Data))
	require.Equal(t, 0, len(m.Header))

	first, err := s.Load(1, nil)
	require.NoError(t, err)
	var plain store.Msg
	second, err := s.Load(1, &plain)
	require.NoError(t, err)
	second.Data[0] = 'S'
	require.Equal(t, "small", string(first.Data))
	require.Equal(t, 0, cap(plain.Buf))
}

// BenchmarkLoadNext reads a stream of 128-byte messages in order, as a
// consumer does, into a Msg with a lent buffer.
func BenchmarkLoadNext(b *testing.B) {
	for _, c := range []filestore.Compression{filestore.CompressionNone, filestore.CompressionS2} {
		b.Run(c.String(), func(b *testing.B) {
			s := mustOpen(b, vfs.OS, b.TempDir(), filestore.Config{SyncInterval: time.Hour, Compression: c})
			const n = 100000
			for range n {
				if _, _, err := s.Store("sensors.temp", nil, benchPayload, 0); err != nil {
					b.Fatal(err)
				}
			}
			if err := s.Checkpoint(); err != nil {
				b.Fatal(err)
			}
			sm := store.Msg{Buf: make([]byte, 0, 256)}
			b.ReportAllocs()
			seq := uint64(1)
			for b.Loop() {
				m, err := s.LoadNext("", seq, &sm)
				if err != nil {
					b.Fatal(err)
				}
				seq = m.Seq%n + 1
			}
		})
	}
}
