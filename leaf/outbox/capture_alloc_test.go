//go:build !race

// The race detector allocates on its own, so allocation budgets are
// checked in normal builds only.

package outbox

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/core/server/servertest"
	"github.com/leafbox/leafbox/leaf/clock"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/vfs"
)

// TestCaptureAllocs holds the uplink capture to its budget: a client's PUB
// on a captured subject, read by the server, routed to the uplink's
// in-process subscription and written into a file outbox with its
// Nats-Msg-Id and capture stamp, allocates nothing per message once warm
// (a subject seen before; a new one costs the string and the store's
// index entry). The outbox is wired as the gateway wires it (an in-process
// subscription per captured subject, Sync before each PONG).
func TestCaptureAllocs(t *testing.T) {
	srv := servertest.Start(t, server.Options{})
	stream, err := filestore.Open(vfs.OS, t.TempDir(), filestore.Config{
		Config:       store.Config{Name: "up"},
		SyncInterval: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stream.Close() })
	clk, err := clock.Open(clock.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ob := newOutbox(t, stream, newFakeHub(false), Config{HubPrefix: "site1.", Stream: "HUB", Clock: clk})
	conn := srv.InProcess("")
	t.Cleanup(conn.Close)
	if _, err := conn.Subscribe("sensors.>", "", func(m server.Msg) {
		_ = ob.CaptureBytes(m.Subject, m.Header, m.Data)
	}); err != nil {
		t.Fatal(err)
	}
	srv.OnPing(func() { _ = ob.Sync() })

	// A burst cycles over 16 sensors' subjects, as a gateway's captures
	// repeat a bounded set.
	const size, batch, rounds = 16, 1024, 100
	var burst []byte
	for i := range batch {
		burst = fmt.Appendf(burst, "PUB sensors.s%d.temp %d\r\n%s\r\n", i%16, size, bytes.Repeat([]byte("x"), size))
	}
	// The captures run on the publisher's read goroutine, so each burst
	// is stored when its PONG arrives.
	perMsg := servertest.MallocsPerMsg(t, srv.Addr().String(), "CONNECT {\"verbose\":false,\"pedantic\":false}\r\n", burst, batch, rounds, nil)
	if got, want := ob.Status().Stored, uint64((servertest.WarmBursts+rounds)*batch); got != want {
		t.Fatalf("stored %d messages, want %d", got, want)
	}
	t.Logf("%.4f allocations per captured message over %d messages", perMsg, rounds*batch)
	// The budget is no allocation per message (it was 3: the subject as a
	// string, the header block and one in the store's scan of each
	// sealed block). What remains, about 0.011, is the store's own, once
	// per block (rolling a block, writing its index), and the runtime's;
	// a per-message allocation would show as ≥ 1.
	if perMsg > 0.05 {
		t.Fatalf("capture allocates %.4f times per message, budget 0 (0.05 with the stream's per-block work)", perMsg)
	}
}
