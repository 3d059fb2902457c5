package leaf_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// Lost is closed when the connection up at the call drops, even when the
// link is connected again by the time anyone looks, and at once when the
// link is not connected; a new connection gets a new watch.
func TestLinkLost(t *testing.T) {
	hub := leaftest.StartHub(t, leaftest.HubOptions{Leaf: "no_advertise: true"})
	proxy := leaftest.StartProxy(t, fmt.Sprintf("127.0.0.1:%d", hub.LeafPort))
	g := startGateway(t, testConfig(proxy.LeafURL()))
	g.waitFor(t, "the link to connect", func(s leaf.Status) bool { return s.State == leaf.StateConnected })
	ctx, cancel := context.WithTimeout(context.Background(), leaftest.Timeout)
	defer cancel()
	lost := g.link.Lost(ctx)
	select {
	case <-lost:
		t.Fatal("lost while connected")
	case <-time.After(50 * time.Millisecond): // nothing happens: a short look suffices
	}
	proxy.Cut()
	select {
	case <-lost:
	case <-ctx.Done():
		t.Fatal("the cut was not reported")
	}
	g.waitFor(t, "the link to notice the cut", func(s leaf.Status) bool { return s.State != leaf.StateConnected })
	if g.link.Status().State != leaf.StateConnected {
		select {
		case <-g.link.Lost(ctx):
		default:
			t.Fatal("Lost is not closed at once while disconnected")
		}
	}
	proxy.Restore()
	g.waitFor(t, "the link to reconnect", func(s leaf.Status) bool { return s.State == leaf.StateConnected })
	select {
	case <-g.link.Lost(ctx):
		t.Fatal("a new connection's Lost is closed")
	default:
	}
}
