package leaf_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// TestBlackholedLinkReconnects runs a link to a real hub through a fault
// proxy that starts dropping every byte while keeping the connection
// open, as a dead mobile network does. The link must notice from its
// unanswered PINGs, keep retrying while new connections go nowhere
// either, and work again, both ways, once the network is back.
func TestBlackholedLinkReconnects(t *testing.T) {
	hub := leaftest.StartHub(t, leaftest.HubOptions{Leaf: "no_advertise: true"})
	proxy := leaftest.StartProxy(t, fmt.Sprintf("127.0.0.1:%d", hub.LeafPort))
	cfg := testConfig(proxy.LeafURL())
	cfg.PingInterval = 100 * time.Millisecond
	cfg.MaxPingsOut = 2
	cfg.HandshakeTimeout = 300 * time.Millisecond
	g := startGateway(t, cfg)
	hc := connect(t, hub.ClientURL())
	gc := connect(t, g.clientURL())
	up, err := hc.SubscribeSync("up")
	require.NoError(t, err)
	down, err := gc.SubscribeSync("down")
	require.NoError(t, err)
	g.flush(t, hc, gc)
	require.NoError(t, gc.Publish("up", []byte("before")))
	if m := next(t, up); string(m.Data) != "before" {
		t.Fatalf("hub got %q", m.Data)
	}

	start := time.Now()
	proxy.Blackhole()
	g.waitFor(t, "the link to notice the dead connection", func(s leaf.Status) bool { return s.State != leaf.StateConnected })
	detected := time.Since(start)
	accepted := proxy.Accepted()
	g.waitFor(t, "a reconnect attempt into the blackhole", func(s leaf.Status) bool {
		return proxy.Accepted() > accepted && s.State != leaf.StateConnected
	})
	proxy.Restore()
	g.waitFor(t, "the link to reconnect", func(s leaf.Status) bool { return s.State == leaf.StateConnected })
	g.flush(t, hc, gc)
	require.NoError(t, gc.Publish("up", []byte("after")))
	if m := next(t, up); string(m.Data) != "after" {
		t.Fatalf("hub got %q after the blackhole", m.Data)
	}
	require.NoError(t, hc.Publish("down", []byte("after")))
	if m := next(t, down); string(m.Data) != "after" {
		t.Fatalf("gateway got %q after the blackhole", m.Data)
	}
	st := g.link.Status()
	t.Logf("stale connection detected after %v; last error %q; %d connects; %s", detected, st.LastError, st.Connects, proxy)
	if st.Connects < 2 {
		t.Fatalf("link connected %d times, want at least 2", st.Connects)
	}
}
