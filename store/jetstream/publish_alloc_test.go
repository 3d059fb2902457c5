//go:build !race

// The race detector allocates on its own, so allocation budgets are
// checked in normal builds only.

package jetstream

import (
	"bytes"
	"fmt"
	"net"
	"runtime"
	"testing"
	"time"

	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/core/server/servertest"
)

// TestPublishAllocs holds the allocations of one JetStream publish to
// their budget, for a memory and a file stream: a raw client's PUB with a
// reply, read by the server, stored by the engine and answered with a
// PubAck on the client's inbox, end to end, once warm. File streams fsync
// every SyncInterval (the configuration of the benchmarks); fsync before
// every ack is the committer's path and is not measured here.
func TestPublishAllocs(t *testing.T) {
	// Measured 4 (memory) and 3 (file) before the PubAck was built in a
	// pooled buffer and the subject named without allocating. What is
	// left: the reply subject as a string for Bus.Publish (it is unique
	// per request; it goes when the Bus takes bytes), and for a memory
	// stream the copy of the message it keeps. 0.1 covers the per-block
	// and runtime work amortised over the messages.
	for _, tc := range []struct {
		storage njs.StorageType
		budget  float64
	}{
		{njs.MemoryStorage, 2.1},
		{njs.FileStorage, 1.1},
	} {
		t.Run(tc.storage.String(), func(t *testing.T) {
			env := newTestEnv(t, Config{SyncInterval: 100 * time.Millisecond})
			_, err := env.js.CreateStream(testCtx(t), njs.StreamConfig{Name: "B", Subjects: []string{"b"}, Storage: tc.storage})
			require.NoError(t, err)
			perMsg := publishAllocs(t, env.srv.Addr().String())
			t.Logf("%s: %.4f allocations per publish", tc.storage, perMsg)
			if perMsg > tc.budget {
				t.Fatalf("%s publish allocates %.4f times, budget %v", tc.storage, perMsg, tc.budget)
			}
		})
	}
}

// publishAllocs publishes bursts of PUBs with a reply on subject "b" from
// a raw client at addr and returns the allocations per publish, counted
// over the whole process. A burst ends in PING: the engine stores and
// acks on the publisher's read goroutine, so its PONG comes after the
// burst's PubAcks.
func publishAllocs(t *testing.T, addr string) float64 {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	const size, batch = 128, 1000
	var burst []byte
	for range batch {
		burst = fmt.Appendf(burst, "PUB b _INBOX.acks %d\r\n%s\r\n", size, bytes.Repeat([]byte("x"), size))
	}
	burst = append(burst, "PING\r\n"...)
	_, err = c.Write([]byte("CONNECT {\"verbose\":false,\"pedantic\":false}\r\nSUB _INBOX.acks 1\r\n"))
	require.NoError(t, err)
	buf := make([]byte, 64<<10)
	pong := []byte("PONG\r\n")
	tail := make([]byte, 0, len(buf)+len(pong))
	round := func() {
		_, err := c.Write(burst)
		require.NoError(t, err)
		tail = tail[:0]
		for !bytes.HasSuffix(tail, pong) {
			_ = c.SetReadDeadline(time.Now().Add(servertest.Timeout))
			n, err := c.Read(buf)
			require.NoError(t, err)
			if bytes.Contains(buf[:n], []byte(`"error"`)) {
				t.Fatalf("publish failed: %q", buf[:n])
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
	const rounds = 50
	for range rounds {
		round()
	}
	runtime.ReadMemStats(&after)
	return float64(after.Mallocs-before.Mallocs) / (rounds * batch)
}
