//go:build !race

package server_test

import (
	"bytes"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

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
	sub := rawSubscriber(b, s, subj)
	ic := s.InProcess("")
	data := make([]byte, size)
	got := make([]byte, msgBytes(subj, size))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ic.Publish(subj, "", nil, data)
		if _, err := io.ReadFull(sub, got); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPubSubLatency measures one PUB at a time from a network
// publisher: each MSG is received before the next PUB is written.
func BenchmarkPubSubLatency(b *testing.B) {
	s := servertest.Start(b, server.Options{})
	const subj, size = "bench", 16
	sub := rawSubscriber(b, s, subj)
	pub := rawSubscriber(b, s, "unused")
	one := publishBatch(subj, size, 1)
	got := make([]byte, msgBytes(subj, size))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := pub.Write(one); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(sub, got); err != nil {
			b.Fatal(err)
		}
	}
}

// rawSubscriber connects a raw client subscribed to subj (sid 1) and
// returns once the subscription is in place; the caller reads it.
func rawSubscriber(t testing.TB, s *server.Server, subj string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.Write([]byte("CONNECT {\"verbose\":false,\"pedantic\":false}\r\nSUB " + subj + " 1\r\nPING\r\n")); err != nil {
		t.Fatal(err)
	}
	// Read up to the PONG exactly, byte by byte, so no MSG is consumed.
	var seen []byte
	one := make([]byte, 1)
	for !bytes.HasSuffix(seen, []byte("PONG\r\n")) {
		_ = c.SetReadDeadline(time.Now().Add(servertest.Timeout))
		if _, err := c.Read(one); err != nil {
			t.Fatal(err)
		}
		seen = append(seen, one[0])
	}
	_ = c.SetReadDeadline(time.Time{})
	return c
}
