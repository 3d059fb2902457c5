package app

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// TestUplinkBlackholedLink runs an uplink through a fault proxy that stops
// forwarding bytes while keeping the connection open, as a dead mobile
// network does. With a short ping_interval the gateway notices, keeps
// accepting messages into the outbox, and once the network is back the
// hub stream holds every message exactly once, in order.
func TestUplinkBlackholedLink(t *testing.T) {
	const before, during = 100, 300
	ctx, cancel := context.WithTimeout(context.Background(), 4*testTimeout)
	defer cancel()
	hub, _, stream := startJSHub(t, ctx, leaftest.HubOptions{Leaf: "no_advertise: true"}, "hub",
		jetstream.StreamConfig{Name: "SITE", Subjects: []string{"site1.>"}, Duplicates: time.Minute})
	proxy := leaftest.StartProxy(t, fmt.Sprintf("127.0.0.1:%d", hub.LeafPort))
	a := startGateway(t, "server_name: gw1\n"+
		"leafnodes: {remotes: [{url: '"+proxy.LeafURL()+"', ping_interval: 100ms, max_pings_out: 2}]}\n"+
		"uplinks: [{name: tel, subjects: [telemetry.>], hub_subject_prefix: site1., stream: SITE, drain_jitter: 0s}]\n", Flags{})
	gw := natsConnect(t, "nats://"+a.Addr().String())
	publish := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			require.NoError(t, gw.Publish("telemetry.t", []byte(strconv.Itoa(i))))
		}
		require.NoError(t, gw.Flush()) // PONG: all of them are in the outbox
	}
	state := func() string { return fmt.Sprintf("uplink %+v; %s", a.UplinkStatus()[0], proxy) }

	publish(0, before)
	awaitStreamMsgs(t, ctx, stream, before, state)
	proxy.Blackhole()
	if err := a.node.Link(0).Wait(ctx, func(st leaf.Status) bool { return st.State != leaf.StateConnected }); err != nil {
		t.Fatalf("timed out waiting until the gateway notices the dead link: %v; %s", err, state())
	}
	publish(before, before+during)
	proxy.Restore()
	awaitStreamMsgs(t, ctx, stream, before+during, state)
	for seq := uint64(1); seq <= before+during; seq++ {
		m, err := stream.GetMsg(ctx, seq)
		require.NoError(t, err)
		if string(m.Data) != strconv.Itoa(int(seq-1)) {
			t.Fatalf("hub seq %d holds %q, want %d", seq, m.Data, seq-1)
		}
	}
	awaitUplinkAcked(t, ctx, a, before+during)
}
