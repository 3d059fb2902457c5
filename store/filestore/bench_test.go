package filestore_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/vfs"
)

// countingOS is the host file system, counting fsyncs.
func countingOS(syncs *atomic.Int64) vfs.FS {
	return vfs.Inject(vfs.OS, func(op vfs.Op, path string) error {
		if op == vfs.OpSync {
			syncs.Add(1)
		}
		return nil
	})
}

var benchPayload = make([]byte, 128)

// BenchmarkStoreAsync stores 128-byte messages with a one-second sync
// interval on the host file system.
func BenchmarkStoreAsync(b *testing.B) {
	for _, c := range []filestore.Compression{filestore.CompressionNone, filestore.CompressionS2} {
		b.Run(c.String(), func(b *testing.B) {
			s, err := filestore.Open(vfs.OS, b.TempDir(), filestore.Config{SyncInterval: time.Second, Compression: c})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			b.SetBytes(int64(len(benchPayload)))
			b.ReportAllocs()
			start := time.Now()
			for i := 0; b.Loop(); i++ {
				if _, _, err := s.Store("sensors.temp", nil, benchPayload, 0); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
		})
	}
}

// BenchmarkStoreSync stores with SyncInterval 0 (fsync before Store
// returns) from 1 and 8 concurrent writers: with group commit the writers
// share fsyncs, which fsyncs/msg shows.
func BenchmarkStoreSync(b *testing.B) {
	for _, writers := range []int{1, 8} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			var syncs atomic.Int64
			s, err := filestore.Open(countingOS(&syncs), b.TempDir(), filestore.Config{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			b.SetBytes(int64(len(benchPayload)))
			syncs.Store(0)
			b.ResetTimer()
			start := time.Now()
			var next atomic.Int64
			var wg sync.WaitGroup
			for range writers {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						if _, _, err := s.Store("sensors.temp", nil, benchPayload, 0); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
			b.ReportMetric(float64(syncs.Load())/float64(b.N), "fsyncs/msg")
		})
	}
}

// BenchmarkLoad loads messages from a 100k-message stream, in order and at
// random, from plain and compressed blocks.
func BenchmarkLoad(b *testing.B) {
	const n = 100_000
	for _, c := range []filestore.Compression{filestore.CompressionNone, filestore.CompressionS2} {
		dir := b.TempDir()
		s, err := filestore.Open(vfs.OS, dir, filestore.Config{SyncInterval: time.Minute, Compression: c})
		if err != nil {
			b.Fatal(err)
		}
		for i := range n {
			if _, _, err := s.Store(fmt.Sprintf("sensors.%d", i%100), nil, benchPayload, 0); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Checkpoint(); err != nil {
			b.Fatal(err)
		}
		for _, order := range []string{"seq", "random"} {
			b.Run(c.String()+"/"+order, func(b *testing.B) {
				b.ReportAllocs()
				seq, x := uint64(0), uint64(88172645463325252)
				for b.Loop() {
					if order == "seq" {
						seq = seq%n + 1
					} else {
						x ^= x << 13
						x ^= x >> 7
						x ^= x << 17
						seq = x%n + 1
					}
					if _, err := s.Load(seq, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		s.Close()
	}
}

// BenchmarkStoreKV stores 128-byte values over 100 keys of a stream with
// MaxMsgsPerSubject 1, as a KV bucket does, so that every Store after the
// first hundred evicts the key's previous value: with SyncInterval 0
// (sync) and a one-second interval (async) on the host file system.
func BenchmarkStoreKV(b *testing.B) {
	keys := make([]string, 100)
	for i := range keys {
		keys[i] = fmt.Sprintf("$KV.b.k%d", i)
	}
	for _, mode := range []struct {
		name     string
		interval time.Duration
	}{{"sync", 0}, {"async", time.Second}} {
		b.Run(mode.name, func(b *testing.B) {
			var syncs atomic.Int64
			cfg := filestore.Config{SyncInterval: mode.interval}
			cfg.MaxMsgsPerSubject = 1
			s, err := filestore.Open(countingOS(&syncs), b.TempDir(), cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			b.SetBytes(int64(len(benchPayload)))
			b.ReportAllocs()
			syncs.Store(0)
			start := time.Now()
			for i := 0; b.Loop(); i++ {
				if _, _, err := s.Store(keys[i%len(keys)], nil, benchPayload, 0); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
			b.ReportMetric(float64(syncs.Load())/float64(b.N), "fsyncs/msg")
		})
	}
}
