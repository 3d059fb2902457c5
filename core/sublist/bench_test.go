package sublist

import (
	"fmt"
	"testing"

	"github.com/leafbox/leafbox/core/require"
)

// newBenchSublist builds a Sublist shaped like a busy server: many literal
// subscriptions, a sprinkling of wildcards and queue groups.
func newBenchSublist(b *testing.B) *Sublist[int] {
	b.Helper()
	s := New[int]()
	v := 0
	insert := func(subj, queue string) {
		v++
		require.NoError(b, s.Insert(subj, queue, v))
	}
	for i := range 100 {
		for j := range 100 {
			insert(fmt.Sprintf("orders.region%d.store%d", i, j), "")
		}
		insert(fmt.Sprintf("orders.region%d.*", i), "")
		insert(fmt.Sprintf("orders.region%d.>", i), "workers")
	}
	insert("orders.>", "")
	insert(">", "audit")
	return s
}

func BenchmarkMatchCached(b *testing.B) {
	s := newBenchSublist(b)
	subjects := make([]string, 512)
	for i := range subjects {
		subjects[i] = fmt.Sprintf("orders.region%d.store%d", i%100, i%37)
		s.Match(subjects[i])
	}
	b.Run("string", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			s.Match(subjects[i%len(subjects)])
			i++
		}
	})
	b.Run("bytes", func(b *testing.B) {
		raw := make([][]byte, len(subjects))
		for i, subj := range subjects {
			raw[i] = []byte(subj)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			s.MatchBytes(raw[i%len(raw)])
			i++
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				s.Match(subjects[i%len(subjects)])
				i++
			}
		})
	})
}

// BenchmarkMatchUncached cycles through far more subjects than the cache
// holds, so nearly every Match walks the trie, builds a result and evicts a
// cache entry.
func BenchmarkMatchUncached(b *testing.B) {
	s := newBenchSublist(b)
	subjects := make([]string, 64*cacheSize)
	for i := range subjects {
		subjects[i] = fmt.Sprintf("orders.region%d.store%d", i%100, i/100)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		s.Match(subjects[i%len(subjects)])
		i++
	}
	b.ReportMetric(s.Stats().CacheHitRate, "hit-rate")
}

// BenchmarkInsertRemove measures subscribe/unsubscribe churn against a full
// cache, which each wildcard Insert and Remove must update.
func BenchmarkInsertRemove(b *testing.B) {
	for _, subj := range []string{"orders.region7.store7", "orders.region7.*", "orders.*.store7"} {
		b.Run(subj, func(b *testing.B) {
			s := newBenchSublist(b)
			for i := range cacheSize {
				s.Match(fmt.Sprintf("orders.region%d.store%d", i%100, i/100))
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := s.Insert(subj, "", -1); err != nil {
					b.Fatal(err)
				}
				if err := s.Remove(subj, "", -1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCloseConnection measures removing one connection's five
// subscriptions (queue members on two wildcards that every cached subject
// matches, and three of its own) from a sublist whose full cache holds
// results with 1,000 members, then subscribing them again: the work a
// mass disconnect repeats per connection.
func BenchmarkCloseConnection(b *testing.B) {
	conn := func(v int) []Entry[int] {
		return []Entry[int]{{"sensor.*", "ingest", v}, {"sensor.>", "archive", v},
			{fmt.Sprintf("dev.%d.cmd", v), "", v}, {fmt.Sprintf("dev.%d.cfg.*", v), "", v}, {fmt.Sprintf("dev.%d.>", v), "", v}}
	}
	setup := func(b *testing.B) *Sublist[int] {
		s := New[int]()
		for v := range 500 {
			for _, e := range conn(v) {
				require.NoError(b, s.Insert(e.Subject, e.Queue, e.Value))
			}
		}
		for i := range cacheSize {
			s.Match(fmt.Sprintf("sensor.%d", i))
		}
		return s
	}
	b.Run("Remove", func(b *testing.B) {
		s := setup(b)
		b.ReportAllocs()
		for b.Loop() {
			for _, e := range conn(0) {
				require.NoError(b, s.Remove(e.Subject, e.Queue, e.Value))
			}
			b.StopTimer()
			for _, e := range conn(0) {
				require.NoError(b, s.Insert(e.Subject, e.Queue, e.Value))
			}
			for i := range cacheSize {
				s.Match(fmt.Sprintf("sensor.%d", i))
			}
			b.StartTimer()
		}
	})
	b.Run("RemoveBatch", func(b *testing.B) {
		s := setup(b)
		b.ReportAllocs()
		for b.Loop() {
			if n := len(s.RemoveBatch(conn(0))); n != 5 {
				b.Fatalf("removed %d of 5", n)
			}
			b.StopTimer()
			for _, e := range conn(0) {
				require.NoError(b, s.Insert(e.Subject, e.Queue, e.Value))
			}
			for i := range cacheSize {
				s.Match(fmt.Sprintf("sensor.%d", i))
			}
			b.StartTimer()
		}
	})
}
