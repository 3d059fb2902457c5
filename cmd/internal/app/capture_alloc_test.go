//go:build !race

// The race detector allocates on its own, so allocation budgets are
// checked in normal builds only.

package app

import (
	"bytes"
	"fmt"
	"net"
	"runtime"
	"testing"
	"time"
)

// TestGatewayCaptureAllocs holds the uplink capture to its budget on the
// gateway's own path, as leaf/outbox's TestCaptureAllocs does through an
// adapter of its own: a raw client's PUB on a captured subject, read by
// the broker, routed to the leaf runtime's capture subscription through
// the app's brokerConn adapter, and written into the uplink's file outbox
// (synced before the PONG) costs at most one allocation per message once
// warm. The uplink's hub does not answer (port 1), so nothing is
// forwarded while it is measured; the link's redials are the only other
// work, a few allocations a second against over 100,000 messages.
func TestGatewayCaptureAllocs(t *testing.T) {
	a := startGateway(t, "leafnodes: {remotes: [{url: 'nats://127.0.0.1:1'}]}\n"+
		"uplinks: [{name: tel, subjects: ['sensors.>'], hub_subject_prefix: site1.}]\n", Flags{})
	pub, err := net.Dial("tcp", a.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pub.Close() })
	// A burst cycles over 16 sensors' subjects, as a gateway's captures
	// repeat a bounded set.
	const size, batch = 16, 1024
	var burst []byte
	for i := range batch {
		burst = fmt.Appendf(burst, "PUB sensors.s%d.temp %d\r\n%s\r\n", i%16, size, bytes.Repeat([]byte("x"), size))
	}
	burst = append(burst, "PING\r\n"...)
	if _, err := pub.Write([]byte("CONNECT {\"verbose\":false,\"pedantic\":false}\r\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	pong := []byte("PONG\r\n")
	tail := make([]byte, 0, len(buf)+len(pong)) // the last bytes read
	// round sends a burst and waits for its PONG: the captures run on the
	// publisher's read goroutine and are synced before the PONG, so they
	// are all stored by then.
	round := func() {
		if _, err := pub.Write(burst); err != nil {
			t.Fatal(err)
		}
		tail = tail[:0]
		for !bytes.HasSuffix(tail, pong) {
			_ = pub.SetReadDeadline(time.Now().Add(testTimeout))
			n, err := pub.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			tail = append(tail, buf[:n]...)
			if k := len(tail) - len(pong); k > 0 {
				tail = tail[:copy(tail, tail[k:])]
			}
		}
	}
	for range 20 {
		round() // warm up buffers, blocks and caches
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const rounds = 100
	for range rounds {
		round()
	}
	runtime.ReadMemStats(&after)
	if got, want := a.node.UplinkStatus()[0].Stored, uint64((20+rounds)*batch); got != want {
		t.Fatalf("stored %d messages, want %d", got, want)
	}
	msgs := float64(rounds * batch)
	perMsg := float64(after.Mallocs-before.Mallocs) / msgs
	t.Logf("%.4f allocations per captured message over %.0f messages", perMsg, msgs)
	if perMsg > 1 {
		t.Fatalf("capture allocates %.4f times per message, budget 1", perMsg)
	}
}
