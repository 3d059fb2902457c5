package memstore

import (
	"fmt"
	"testing"

	"github.com/leafbox/leafbox/store"
)

// BenchmarkStore appends messages of one subject to a stream capped at
// 1,024 messages, so each Store also evicts the oldest: the steady state of
// a stream at its limit, and the set-up of nats-server's
// Benchmark_MemStoreStoreMsg for comparison.
func BenchmarkStore(b *testing.B) {
	for _, size := range []int{16, 64, 1024} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			benchmarkStore(b, store.Config{MaxMsgs: 1024}, size)
		})
	}
}

// BenchmarkStoreGrowing appends to a stream that grows to 64 MiB before it
// starts evicting, so the cost includes growing the log.
func BenchmarkStoreGrowing(b *testing.B) {
	for _, size := range []int{16, 1024} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			benchmarkStore(b, store.Config{MaxBytes: 64 << 20}, size)
		})
	}
}

func benchmarkStore(b *testing.B, cfg store.Config, size int) {
	s := newTestStream(b, cfg)
	data := make([]byte, size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := s.Store("bench", nil, data, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStoreKV overwrites 10,000 keys with a history of one: every
// Store replaces the key's previous revision.
func BenchmarkStoreKV(b *testing.B) {
	s := newTestStream(b, store.Config{MaxMsgsPerSubject: 1})
	keys := make([]string, 10_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("$KV.config.key%d", i)
	}
	data := make([]byte, 64)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, _, err := s.Store(keys[i%len(keys)], nil, data, 0); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkLoadLast reads the latest revision of KV keys (KV Get) from a
// bucket of 10,000 keys with a history of 5 into a reused Msg.
func BenchmarkLoadLast(b *testing.B) {
	s := newTestStream(b, store.Config{MaxMsgsPerSubject: 5})
	keys := make([]string, 10_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("$KV.config.key%d", i)
	}
	data := make([]byte, 64)
	for range 5 {
		for _, k := range keys {
			if _, _, err := s.Store(k, nil, data, 0); err != nil {
				b.Fatal(err)
			}
		}
	}
	var sm store.Msg
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := s.LoadLast(keys[i%len(keys)], &sm); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkLoad reads messages by sequence into a reused Msg.
func BenchmarkLoad(b *testing.B) {
	s := newTestStream(b, store.Config{})
	data := make([]byte, 128)
	const n = 100_000
	for range n {
		if _, _, err := s.Store("a.b", nil, data, 0); err != nil {
			b.Fatal(err)
		}
	}
	var sm store.Msg
	b.ReportAllocs()
	seq := uint64(0)
	for b.Loop() {
		seq = seq%n + 1
		if _, err := s.Load(seq, &sm); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadNextLiteral is a filtered consumer reading one subject that
// makes up a tenth of the stream, in order.
func BenchmarkLoadNextLiteral(b *testing.B) {
	s := newTestStream(b, store.Config{})
	data := make([]byte, 128)
	const n = 100_000
	for i := range n {
		if _, _, err := s.Store(fmt.Sprintf("dev.%d", i%10), nil, data, 0); err != nil {
			b.Fatal(err)
		}
	}
	var sm store.Msg
	b.ReportAllocs()
	start := uint64(0)
	for b.Loop() {
		m, err := s.LoadNext("dev.3", start, &sm)
		if err != nil {
			start = 0
			continue
		}
		start = m.Seq + 1
	}
}
