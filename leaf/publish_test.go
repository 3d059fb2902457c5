package leaf_test

import (
	"errors"
	"testing"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// TestLinkPublish checks Link.Publish sends to the hub over this link
// only: the hub's subscriber gets it with its reply and headers, a local
// subscriber of the same subject does not, and the failures are reported.
func TestLinkPublish(t *testing.T) {
	hub := leaftest.StartHub(t, leaftest.HubOptions{})
	g := startGatewayNoWait(t, testConfig(hub.LeafURL()))
	if err := g.link.Publish("up.x", "", nil, nil); !errors.Is(err, leaf.ErrNotConnected) && !errors.Is(err, leaf.ErrNoInterest) {
		t.Fatalf("Publish while connecting: %v", err)
	}
	g.waitFor(t, "connected", func(st leaf.Status) bool { return st.State == leaf.StateConnected })
	if err := g.link.Publish("up.x", "", nil, nil); !errors.Is(err, leaf.ErrNoInterest) {
		t.Fatalf("Publish without hub interest: %v, want ErrNoInterest", err)
	}

	hc := connect(t, hub.ClientURL())
	up, err := hc.SubscribeSync("up.>")
	require.NoError(t, err)
	gw := connect(t, g.clientURL())
	local, err := gw.SubscribeSync("up.>")
	require.NoError(t, err)
	g.flush(t, hc, gw)

	hdr := []byte("NATS/1.0\r\nK: v\r\n\r\n")
	require.NoError(t, g.link.Publish("up.x", "answer.here", hdr, []byte("payload")))
	m := next(t, up)
	if m.Subject != "up.x" || m.Reply != "answer.here" || string(m.Data) != "payload" || m.Header.Get("K") != "v" {
		t.Fatalf("hub got %q reply %q data %q header %v", m.Subject, m.Reply, m.Data, m.Header)
	}
	g.flush(t, hc, gw)
	noMsg(t, local)

	// deny_exports holds for Publish too.
	cfg := testConfig(hub.LeafURL())
	cfg.Name = "gw-test-2"
	cfg.DenyExports = []string{"up.secret"}
	g2 := startGateway(t, cfg)
	g2.flush(t, hc)
	if err := g2.link.Publish("up.secret", "", nil, nil); err == nil {
		t.Fatal("Publish of a denied subject succeeded")
	}
}
