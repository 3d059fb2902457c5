//go:build !race

package server_test

import (
	"runtime"
	"testing"

	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/core/server/servertest"
)

// BenchmarkInProcessPublish measures an in-process publisher (as a bridge
// or JetStream delivery uses it) sending b.N messages of 16 bytes to one
// network subscriber over loopback, as fast as it can.
func BenchmarkInProcessPublish(b *testing.B) {
	s := servertest.Start(b, server.Options{})
	const subj, size = "bench", 16
	_, received := rawPair(b, s, subj)
	ic := s.InProcess("")
	data := make([]byte, size)
	per := msgBytes(subj, size)
	b.ReportAllocs()
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ic.Publish(subj, "", nil, data)
	}
	for received() < int64(b.N)*per {
		runtime.Gosched()
	}
}

// BenchmarkInProcessPublishLatency measures one in-process publish at a
// time: each message is received by the network subscriber before the
// next is published, so ns/op is the added latency of one delivery.
func BenchmarkInProcessPublishLatency(b *testing.B) {
	s := servertest.Start(b, server.Options{})
	const subj, size = "bench", 16
	_, received := rawPair(b, s, subj)
	ic := s.InProcess("")
	data := make([]byte, size)
	per := msgBytes(subj, size)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ic.Publish(subj, "", nil, data)
		for received() < int64(i+1)*per {
			runtime.Gosched()
		}
	}
}

// BenchmarkPubSubLatency measures one PUB at a time from a network
// publisher: each MSG is received before the next PUB is written.
func BenchmarkPubSubLatency(b *testing.B) {
	s := servertest.Start(b, server.Options{})
	const subj, size = "bench", 16
	pub, received := rawPair(b, s, subj)
	one := publishBatch(subj, size, 1)
	per := msgBytes(subj, size)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := pub.Write(one); err != nil {
			b.Fatal(err)
		}
		for received() < int64(i+1)*per {
			runtime.Gosched()
		}
	}
}
