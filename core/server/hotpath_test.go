//go:build !race

// The race detector allocates on its own, so allocation budgets are
// checked in normal builds only.

package server_test

import (
	"bytes"
	"net"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/core/server/servertest"
)

// rawPair connects a raw subscriber on subj and a raw publisher. The
// subscriber's bytes are counted by a goroutine that allocates nothing.
func rawPair(t testing.TB, s *server.Server, subj string) (pub net.Conn, received func() int64) {
	t.Helper()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	sub := dial()
	if _, err := sub.Write([]byte("CONNECT {\"verbose\":false,\"pedantic\":false}\r\nSUB " + subj + " 1\r\nPING\r\n")); err != nil {
		t.Fatal(err)
	}
	// Wait for the PONG so the subscription is in place.
	var pre [4096]byte
	var seen []byte
	for !bytes.Contains(seen, []byte("PONG\r\n")) {
		_ = sub.SetReadDeadline(time.Now().Add(servertest.Timeout))
		n, err := sub.Read(pre[:])
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, pre[:n]...)
	}
	_ = sub.SetReadDeadline(time.Time{})
	counts := make(chan int64, 1)
	counts <- 0
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := sub.Read(buf)
			total := <-counts
			counts <- total + int64(n)
			if err != nil {
				return
			}
		}
	}()
	received = func() int64 { v := <-counts; counts <- v; return v }
	pub = dial()
	if _, err := pub.Write([]byte("CONNECT {\"verbose\":false,\"pedantic\":false}\r\n")); err != nil {
		t.Fatal(err)
	}
	return pub, received
}

// publishBatch builds n PUB operations of size bytes on subj.
func publishBatch(subj string, size, n int) []byte {
	one := []byte("PUB " + subj + " " + strconv.Itoa(size) + "\r\n" + string(bytes.Repeat([]byte("x"), size)) + "\r\n")
	return bytes.Repeat(one, n)
}

// msgBytes is the size of one delivered MSG for sid 1.
func msgBytes(subj string, size int) int64 {
	return int64(len("MSG "+subj+" 1 "+strconv.Itoa(size)+"\r\n\r\n") + size)
}

// TestHotPathAllocs requires the PUB → route → MSG path, end to end
// through the server's read and write loops, to allocate nothing per
// message once warm.
func TestHotPathAllocs(t *testing.T) {
	s := servertest.Start(t, server.Options{})
	const subj, size, batch = "sensors.temp", 16, 1000
	pub, received := rawPair(t, s, subj)
	burst := publishBatch(subj, size, batch)
	per := msgBytes(subj, size)
	send := func(rounds int) {
		for i := 0; i < rounds; i++ {
			if _, err := pub.Write(burst); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitFor := func(want int64) {
		deadline := time.Now().Add(servertest.Timeout)
		for received() < want {
			if time.Now().After(deadline) {
				t.Fatalf("received %d of %d bytes", received(), want)
			}
			runtime.Gosched()
		}
	}
	// Each burst is received before the next is sent, as with a consumer
	// that keeps up: the flow-control path (stalls) is not measured here.
	var sent int64
	run := func(rounds int) {
		for i := 0; i < rounds; i++ {
			send(1)
			sent += batch * per
			waitFor(sent)
		}
	}
	run(20) // warm up buffers and caches
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const rounds = 200
	run(rounds)
	runtime.ReadMemStats(&after)
	msgs := float64(rounds * batch)
	perMsg := float64(after.Mallocs-before.Mallocs) / msgs
	t.Logf("%.4f allocations per message over %.0f messages", perMsg, msgs)
	// Timers and the runtime allocate a little now and then; a per-message
	// allocation would show as ≥ 1.
	if perMsg > 0.01 {
		t.Fatalf("hot path allocates %.4f times per message", perMsg)
	}
}

// BenchmarkPubSub measures PUB → route → MSG through a real server over
// loopback: b.N messages of 16 bytes from one publisher to one subscriber.
func BenchmarkPubSub(b *testing.B) {
	s := servertest.Start(b, server.Options{})
	const subj, size, batch = "bench", 16, 1000
	pub, received := rawPair(b, s, subj)
	burst := publishBatch(subj, size, batch)
	per := msgBytes(subj, size)
	rounds := (b.N + batch - 1) / batch
	b.ReportAllocs()
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < rounds; i++ {
		if _, err := pub.Write(burst); err != nil {
			b.Fatal(err)
		}
	}
	for received() < int64(rounds*batch)*per {
		runtime.Gosched()
	}
}

// TestInProcessPublishBytesAllocs requires the in-process byte publish
// path, as a leaf link uses it for every hub message, to allocate nothing
// once the route's match is cached: plain and queue subscribers, with a
// reply and with a shown subject that differs from the route.
func TestInProcessPublishBytesAllocs(t *testing.T) {
	s := servertest.Start(t, server.Options{})
	sub := s.InProcess("")
	var got int
	count := func(server.Msg) { got++ }
	for _, q := range []string{"", "g"} {
		if _, err := sub.Subscribe("route.>", q, count); err != nil {
			t.Fatal(err)
		}
	}
	pub := s.InProcess("")
	pub.SetNoEcho()
	route, shown, reply := []byte("route.x"), []byte("stream.x"), []byte("reply.1")
	queues := [][]byte{[]byte("g")}
	data := []byte("0123456789abcdef")
	if n := testing.AllocsPerRun(1000, func() { pub.PublishBytes(route, shown, reply, nil, data) }); n != 0 {
		t.Fatalf("PublishBytes allocates %.1f times", n)
	}
	if n := testing.AllocsPerRun(1000, func() { pub.PublishQueuesBytes(route, route, nil, queues, nil, data) }); n != 0 {
		t.Fatalf("PublishQueuesBytes allocates %.1f times", n)
	}
	if want := 2 * 2 * 1001; got != want {
		t.Fatalf("%d deliveries, want %d", got, want)
	}
}

// TestInProcessToClientAllocs requires an in-process publish to a network
// subscriber (as a bridge or a JetStream delivery makes, written inline or
// by the writer) to allocate nothing once warm.
func TestInProcessToClientAllocs(t *testing.T) {
	s := servertest.Start(t, server.Options{})
	const subj, size = "bridge.x", 16
	_, received := rawPair(t, s, subj)
	ic := s.InProcess("")
	data := make([]byte, size)
	per := msgBytes(subj, size)
	var sent int64
	publish := func() {
		if ic.Publish(subj, "", nil, data) != 1 {
			t.Fatal("not delivered")
		}
		sent += per
	}
	for i := 0; i < 1000; i++ {
		publish()
	}
	if n := testing.AllocsPerRun(5000, publish); n != 0 {
		t.Fatalf("in-process publish to a client allocates %.1f times", n)
	}
	deadline := time.Now().Add(servertest.Timeout)
	for received() < sent {
		if time.Now().After(deadline) {
			t.Fatalf("received %d of %d bytes", received(), sent)
		}
		runtime.Gosched()
	}
}
