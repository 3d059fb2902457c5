package app

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// TestUplinkRemoteSelection runs a gateway linked to two independent hubs
// with an uplink toward each: every message reaches the hub of its
// uplink's remote, and only that one.
func TestUplinkRemoteSelection(t *testing.T) {
	const n = 50
	ctx, cancel := context.WithTimeout(context.Background(), 4*testTimeout)
	defer cancel()
	type hubSide struct {
		hub    *leaftest.Hub
		stream jetstream.Stream
	}
	start := func(name string) hubSide {
		hub, _, s := startJSHub(t, ctx, leaftest.HubOptions{Name: name}, name,
			jetstream.StreamConfig{Name: "SITE", Subjects: []string{"site1.>"}, Duplicates: time.Minute})
		return hubSide{hub, s}
	}
	cloud, plant := start("cloud"), start("plant")

	a := startGateway(t, "http_port: -1\nserver_name: gw1\n"+
		"leafnodes: {remotes: [{name: cloud, url: '"+cloud.hub.LeafURL()+"'}, {name: plant, url: '"+plant.hub.LeafURL()+"'}]}\n"+
		"uplinks:\n"+
		"  - {name: tel, subjects: [telemetry.>], hub_subject_prefix: site1., stream: SITE, drain_jitter: 0s}\n"+
		"  - {name: alarms, subjects: [alarm.>], hub_subject_prefix: site1., stream: SITE, remote: plant, drain_jitter: 0s}\n", Flags{})

	gw := natsConnect(t, "nats://"+a.Addr().String())
	for i := range n {
		require.NoError(t, gw.Publish("telemetry.t", []byte(fmt.Sprint(i))))
		require.NoError(t, gw.Publish("alarm.a", []byte(fmt.Sprint(i))))
	}
	require.NoError(t, gw.Flush())

	for _, want := range []struct {
		side    hubSide
		subject string
	}{{cloud, "site1.telemetry.t"}, {plant, "site1.alarm.a"}} {
		awaitStreamMsgs(t, ctx, want.side.stream, n, func() string { return fmt.Sprintf("%s: uplinks %+v", want.subject, a.UplinkStatus()) })
		for seq := uint64(1); seq <= n; seq++ {
			m, err := want.side.stream.GetMsg(ctx, seq)
			require.NoError(t, err)
			if m.Subject != want.subject || string(m.Data) != fmt.Sprint(seq-1) {
				t.Fatalf("hub seq %d: %q %q, want %q %d", seq, m.Subject, m.Data, want.subject, seq-1)
			}
		}
	}
	// Nothing crossed to the other hub: each stream holds exactly n.
	for _, side := range []hubSide{cloud, plant} {
		info, err := side.stream.Info(ctx)
		require.NoError(t, err)
		require.DeepEqual(t, info.State.Msgs, uint64(n))
	}
}
