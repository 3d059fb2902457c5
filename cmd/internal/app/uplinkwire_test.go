package app

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// TestUplinkWireBytesPerPayloadByte: /uplinkz and /metrics show what the
// uplink's link carried on the wire and its cost per acknowledged payload
// byte.
func TestUplinkWireBytesPerPayloadByte(t *testing.T) {
	const n, size = 200, 128
	ctx, cancel := context.WithTimeout(context.Background(), 4*testTimeout)
	defer cancel()
	hub, _, _ := startJSHub(t, ctx, leaftest.HubOptions{Name: "hub-wire"}, "hub",
		jetstream.StreamConfig{Name: "SITE", Subjects: []string{"site1.>"}, Duplicates: time.Minute})
	a := startGateway(t, "server_name: gw1\n"+
		"leafnodes: {remotes: [{url: '"+hub.LeafURL()+"', compression: 'off'}]}\n"+
		"uplinks: [{name: tel, subjects: [telemetry.>], hub_subject_prefix: site1., stream: SITE, drain_jitter: 0s}]\n", Flags{})
	gw := natsConnect(t, "nats://"+a.Addr().String())
	payload := bytes.Repeat([]byte("x"), size)
	for range n {
		require.NoError(t, gw.Publish("telemetry.a", payload))
	}
	require.NoError(t, gw.Flush())
	awaitUplinkAcked(t, ctx, a, n)

	mon := "http://" + a.MonitorAddr().String()
	var uz monitor.Uplinkz
	getJSON(t, mon+"/uplinkz", &uz)
	require.Equal(t, 1, len(uz.Uplinks))
	u := uz.Uplinks[0]
	require.Equal(t, uint64(n*size), u.AckedPayloadBytes)
	// Plain, every message carries its subject, reply and headers and
	// gets a PubAck back: more than a byte on the wire per payload byte,
	// and not absurdly more.
	if u.WireBytes <= int64(n*size) || u.WireBytesPerPayloadByte <= 1 || u.WireBytesPerPayloadByte > 10 {
		t.Fatalf("/uplinkz wire figures: wire_bytes %d, per payload byte %.2f", u.WireBytes, u.WireBytesPerPayloadByte)
	}
	metrics := httpGet(t, mon+"/metrics")
	for _, family := range []string{"leafbox_uplink_wire_bytes_total{", "leafbox_uplink_wire_bytes_per_payload_byte{", "leafbox_uplink_acked_payload_bytes_total{"} {
		if !strings.Contains(metrics, family) {
			t.Fatalf("/metrics has no %s", family)
		}
	}
}
