//go:build !race

// The race detector allocates on its own, so allocation budgets are
// checked in normal builds only.

package jetstream

import (
	"bytes"
	"fmt"
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
	const size, batch, rounds = 128, 1000, 50
	var burst []byte
	for range batch {
		burst = fmt.Appendf(burst, "PUB b _INBOX.acks %d\r\n%s\r\n", size, bytes.Repeat([]byte("x"), size))
	}
	return servertest.MallocsPerMsg(t, addr, "CONNECT {\"verbose\":false,\"pedantic\":false}\r\nSUB _INBOX.acks 1\r\n", burst, batch, rounds, func(read []byte) {
		if bytes.Contains(read, []byte(`"error"`)) {
			t.Fatalf("publish failed: %q", read)
		}
	})
}
