package mqttstate

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/leafbox/leafbox/core/require"
)

// BenchmarkEnqueueRelease measures one QoS 1 message's life in a session:
// Enqueue, AssignPacketID, Release (PUBACK). On the file backend every
// call is fsynced before it returns; the parallel runs spread the calls
// over 16 sessions, whose fsyncs are shared.
func BenchmarkEnqueueRelease(b *testing.B) {
	payload := make([]byte, 128)
	for _, bk := range []struct {
		name string
		make func(b *testing.B) Backend
	}{
		{"memstore", func(*testing.B) Backend { return Memory{} }},
		{"filestore", func(b *testing.B) Backend { return Files{Dir: b.TempDir()} }},
	} {
		b.Run(bk.name, func(b *testing.B) {
			s := open(b, bk.make(b), Options{})
			require.NoError(b, s.PutSession(sampleSession("c")))
			b.ReportAllocs()
			b.SetBytes(int64(len(payload)))
			b.ResetTimer()
			for i := range b.N {
				seq, err := s.Enqueue("c", Msg{Topic: "bench/t", QoS: 1, Payload: payload})
				if err != nil {
					b.Fatal(err)
				}
				if err := s.AssignPacketID("c", seq, uint16(i%65535+1)); err != nil {
					b.Fatal(err)
				}
				if err := s.Release("c", seq); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bk.name+"/sent", func(b *testing.B) {
			// EnqueueSent folds the packet id into the enqueue: one
			// write fewer per message.
			s := open(b, bk.make(b), Options{})
			require.NoError(b, s.PutSession(sampleSession("c")))
			b.ReportAllocs()
			b.SetBytes(int64(len(payload)))
			b.ResetTimer()
			for i := range b.N {
				seq, err := s.EnqueueSent("c", Msg{Topic: "bench/t", QoS: 1, Payload: payload}, uint16(i%65535+1))
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Release("c", seq); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bk.name+"/parallel16", func(b *testing.B) {
			s := open(b, bk.make(b), Options{})
			for c := range 16 {
				require.NoError(b, s.PutSession(sampleSession(fmt.Sprint("c", c))))
			}
			var next atomic.Int64
			b.ReportAllocs()
			b.SetBytes(int64(len(payload)))
			b.SetParallelism(8) // 8×GOMAXPROCS goroutines over 16 sessions
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				id := fmt.Sprint("c", next.Add(1)%16)
				for pb.Next() {
					seq, err := s.Enqueue(id, Msg{Topic: "bench/t", QoS: 1, Payload: payload})
					if err != nil {
						b.Error(err)
						return
					}
					if err := s.Release(id, seq); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkRetained measures a subscribe's retained lookup among 10,000
// retained topics: a filter matching 100 of them and one matching one.
func BenchmarkRetained(b *testing.B) {
	s := open(b, Memory{}, Options{})
	for i := range 10000 {
		require.NoError(b, s.SetRetained(fmt.Sprintf("site/%d/dev/%d", i%100, i), Msg{Payload: []byte("v")}))
	}
	for _, c := range []struct {
		filter string
		want   int
	}{{"site/7/#", 100}, {"+/+/dev/4242", 1}} {
		b.Run(c.filter, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ms, err := s.Retained(c.filter)
				if err != nil || len(ms) != c.want {
					b.Fatalf("%d messages, %v", len(ms), err)
				}
			}
		})
	}
}
