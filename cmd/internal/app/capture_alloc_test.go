//go:build !race

// The race detector allocates on its own, so allocation budgets are
// checked in normal builds only.

package app

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/leafbox/leafbox/core/server/servertest"
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
	// A burst cycles over 16 sensors' subjects, as a gateway's captures
	// repeat a bounded set.
	const size, batch, rounds = 16, 1024, 100
	var burst []byte
	for i := range batch {
		burst = fmt.Appendf(burst, "PUB sensors.s%d.temp %d\r\n%s\r\n", i%16, size, bytes.Repeat([]byte("x"), size))
	}
	// The captures run on the publisher's read goroutine and are synced
	// before the PONG, so each burst is stored when its PONG arrives.
	perMsg := servertest.MallocsPerMsg(t, a.Addr().String(), "CONNECT {\"verbose\":false,\"pedantic\":false}\r\n", burst, batch, rounds, nil)
	if got, want := a.node.UplinkStatus()[0].Stored, uint64((servertest.WarmBursts+rounds)*batch); got != want {
		t.Fatalf("stored %d messages, want %d", got, want)
	}
	t.Logf("%.4f allocations per captured message over %d messages", perMsg, rounds*batch)
	if perMsg > 1 {
		t.Fatalf("capture allocates %.4f times per message, budget 1", perMsg)
	}
}
